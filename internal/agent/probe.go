package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Drain marks the node draining by creating the drain file; the note
// (who and why) is kept in it for operators.
func Drain(path, note string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	body := fmt.Sprintf("%s %s\n", time.Now().UTC().Format(time.RFC3339), note)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}

// Undrain removes the drain file; undraining a node that is not drained is
// not an error.
func Undrain(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("undrain: %w", err)
	}
	return nil
}

// Drained reports whether the drain file exists.
func Drained(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
