package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// Changing a Logger's destinations while it runs (a configuration reload,
// an upgrade's handover): the new destination gets an output of its own
// (queue.go) and takes the events recorded from the swap on; the one it
// replaces writes what it holds, within swapWait, and is closed.

// swapWait bounds how long a replaced destination may take to write what
// it holds.
const swapWait = 5 * time.Second

// fileOutput names the audit file's output (New).
const fileOutput = "file"

// OpenFile opens an audit file for appending (created 0600).
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	return f, nil
}

// SetFile makes the logger append to w from now on (nil: the process log
// and the sinks only) and closes the previous file: a reload opens the
// file it names first (OpenFile) and swaps it in once everything else is
// ready too.
func (l *Logger) SetFile(w io.WriteCloser) error {
	var add []*output
	if w != nil {
		add = []*output{newOutput(fileOutput, l.fileWriter(w), l.opts, l.log, l.metrics)}
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		for _, o := range add {
			o.close(context.Background())
		}
		if w != nil {
			return w.Close()
		}
		return nil
	}
	old, oldFile := l.swapLocked(func(o *output) bool { return o.name == fileOutput }, add)
	l.file = nil
	if w != nil {
		l.file = w
	}
	l.mu.Unlock()
	l.closeOutputs(old)
	if oldFile != nil {
		return oldFile.Close()
	}
	return nil
}

// SetSinks replaces the sinks every event goes to from now on; the caller
// closes the ones it drops.
func (l *Logger) SetSinks(sinks ...Sink) {
	var add []*output
	for _, s := range sinks {
		add = append(add, l.sinkOutput(s))
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.closeOutputs(add)
		return
	}
	old, _ := l.swapLocked(func(o *output) bool { return o.name != fileOutput }, add)
	l.mu.Unlock()
	l.closeOutputs(old)
}

// swapLocked replaces the outputs drop picks with add, and returns them
// and the file closer as it was; l.mu held.
func (l *Logger) swapLocked(drop func(*output) bool, add []*output) (old []*output, file io.Closer) {
	var keep []*output
	for _, o := range *l.outputs.Load() {
		if drop(o) {
			old = append(old, o)
		} else {
			keep = append(keep, o)
		}
	}
	outs := append(keep, add...)
	l.outputs.Store(&outs)
	return old, l.file
}

// closeOutputs lets replaced outputs write what they hold.
func (l *Logger) closeOutputs(outs []*output) {
	ctx, cancel := context.WithTimeout(context.Background(), swapWait)
	defer cancel()
	for _, o := range outs {
		if !o.close(ctx) {
			l.log.Error("audit: a replaced destination did not write what it held", "output", o.name, "events", o.pending())
		}
	}
}
