package static

import "errors"

// Config is the `directory.static:` section of the gateway configuration,
// used with directory.kind: static.
type Config struct {
	// File is the users file (see configs/users.yaml): names, groups, SSH
	// keys and password hashes. It is re-read when it changes.
	File string `yaml:"file"`
}

// DefaultConfig returns the defaults: no file (it must be named).
func DefaultConfig() Config { return Config{} }

// Validate reports a section that cannot work, as "directory.static.key:
// problem".
func (c Config) Validate() error {
	if c.File == "" {
		return errors.New("directory.static.file: required for directory kind static")
	}
	return nil
}
