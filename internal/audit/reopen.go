package audit

import (
	"fmt"
	"io"
	"os"
)

// OpenFile opens an audit file for appending (created 0600).
func OpenFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit file: %w", err)
	}
	return f, nil
}

// SetFile makes the logger append to w from now on (nil: the process log
// only) and closes the previous file: a reload opens the file it names
// first (OpenFile) and swaps it in once everything else is ready too.
func (l *Logger) SetFile(w io.WriteCloser) error {
	l.mu.Lock()
	old := l.w
	l.w = w
	l.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// SetSinks replaces the sinks every event goes to from now on; the caller
// closes the ones it drops.
func (l *Logger) SetSinks(sinks ...Sink) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sinks = sinks
}
