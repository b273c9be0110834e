package soak

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Disk is a small filesystem of its own (a tmpfs) under a gateway's audit
// file and spool, which a fault fills to the last byte.
type Disk struct {
	Dir    string
	filler string
}

// MountDisk mounts a tmpfs of sizeMiB at dir (created).
func MountDisk(dir string, sizeMiB int) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%dm,mode=0700", sizeMiB), "frontdoor-soak", dir).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("mount tmpfs at %s: %v: %s", dir, err, out)
	}
	return &Disk{Dir: dir, filler: filepath.Join(dir, "filler")}, nil
}

// Fill writes a file until the filesystem is full (ENOSPC) and returns
// how many bytes it took.
func (d *Disk) Fill() (int64, error) {
	f, err := os.OpenFile(d.filler, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(buf)
		n += int64(w)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			return n, err
		}
	}
	// The last pages of a block: fill them byte by byte.
	for {
		if _, err := f.Write(buf[:1]); err != nil {
			break
		}
		n++
	}
	return n, nil
}

// Free removes what Fill wrote.
func (d *Disk) Free() error { return os.Remove(d.filler) }

// FreeBytes is what the filesystem has left.
func (d *Disk) FreeBytes() int64 {
	var st syscall.Statfs_t
	if syscall.Statfs(d.Dir, &st) != nil {
		return -1
	}
	return int64(st.Bavail) * st.Bsize
}

// Unmount unmounts it (lazily: a process that still has a file open keeps
// it until it closes it).
func (d *Disk) Unmount() error {
	if out, err := exec.Command("umount", "-l", d.Dir).CombinedOutput(); err != nil {
		return fmt.Errorf("umount %s: %v: %s", d.Dir, err, out)
	}
	return nil
}
