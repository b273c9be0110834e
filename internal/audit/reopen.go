package audit

import (
	"fmt"
	"os"
)

// Reopen makes the logger append to path from now on ("" : the process log
// only), e.g. after a reload, or after logrotate moved the file away. The
// new file is opened first: if that fails nothing changes. The previous
// file is closed.
func (l *Logger) Reopen(path string) error {
	var f *os.File
	if path != "" {
		var err error
		if f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err != nil {
			return fmt.Errorf("audit file: %w", err)
		}
	}
	l.mu.Lock()
	old := l.w
	l.w = nil
	if f != nil {
		l.w = f
	}
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
