package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The locks file: a gateway's own copy of the lock entries (lock.go), so
// that a lock survives a restart of every gateway at once. It is written
// whole (a temporary file renamed over it, mode 0600) whenever the lock
// entries change, and read once, at Start. What it holds is merged like
// gossip (admit, then last-writer-wins), never written anew: the versions
// in it are the ones the locks were made with. A gateway's lockBook
// (cluster.go) says where the file is and what it last wrote there.

// maxLocksFile bounds what Start reads: maxLocks entries of at most about
// 1 KiB each.
const maxLocksFile = 16 << 20

// locksFile is the file's content.
type locksFile struct {
	Version int     `json:"version"`
	Gateway string  `json:"gateway"`
	Entries []entry `json:"entries"`
}

// startLocks reads the locks file into the store (gateways with a
// LocksFile). A file that cannot be parsed is moved aside and logged: the
// other gateways still hold the locks, and refusing to start would take
// a gateway away for a damaged file.
func (c *Cluster) startLocks() {
	if c.role != RoleGateway || c.cfg.LocksFile == "" {
		return
	}
	c.locks = &lockBook{path: c.cfg.LocksFile, kick: make(chan struct{}, 1)}
	es, err := readLocksFile(c.cfg.LocksFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		aside := c.cfg.LocksFile + ".bad-" + c.now().UTC().Format("20060102T150405Z")
		c.log.Error("cluster: locks file unreadable; moved aside, the locks come back from the other gateways",
			"file", c.cfg.LocksFile, "moved_to", aside, "err", err)
		if rerr := os.Rename(c.cfg.LocksFile, aside); rerr != nil {
			c.log.Error("cluster: moving the locks file aside", "err", rerr)
		}
		return
	}
	n := 0
	now := c.now()
	var kept []entry
	for i := range es {
		e := &es[i]
		if !strings.HasPrefix(e.Key, kindLock+"/") {
			c.noteRefusal(e, refuse(refusedLock, "%s in the locks file", clip(e.Key)))
			continue
		}
		if _, err := c.admit(e, true, now); err != nil {
			c.noteRefusal(e, err)
			continue
		}
		kept = append(kept, *e)
	}
	c.mu.Lock()
	for _, e := range kept {
		if ch, _ := c.st.merge(e, now); ch {
			n++
		}
	}
	c.mu.Unlock()
	c.log.Info("cluster: account locks loaded", "file", c.cfg.LocksFile, "entries", n, "in_force", len(c.Locks()))
}

// readLocksFile reads the entries of a locks file.
func readLocksFile(path string) ([]entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxLocksFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxLocksFile {
		return nil, fmt.Errorf("larger than %d bytes", maxLocksFile)
	}
	var lf locksFile
	if err := json.Unmarshal(b, &lf); err != nil {
		return nil, err
	}
	if lf.Version != 1 {
		return nil, fmt.Errorf("version %d, want 1", lf.Version)
	}
	return lf.Entries, nil
}

// runLocks starts persistLocks, on gateways with a LocksFile.
func (c *Cluster) runLocks() {
	if c.locks == nil {
		return
	}
	c.wg.Add(1)
	go c.persistLocks()
}

// persistLocks writes the locks file whenever the lock entries changed,
// until Close, and once more then.
func (c *Cluster) persistLocks() {
	defer c.wg.Done()
	c.locksChanged() // what Start merged may need writing back
	for {
		select {
		case <-c.stop:
			c.writeLocks()
			return
		case <-c.locks.kick:
			c.writeLocks()
		}
	}
}

// writeLocks writes the lock entries to the file if they changed since
// the last write.
func (c *Cluster) writeLocks() {
	c.mu.Lock()
	locks := c.st.byKind[kindLock]
	sum := [2]uint64{uint64(len(locks))}
	for _, e := range locks {
		sum[1] += e.Ver
	}
	if sum == c.locks.sum && c.locks.last != nil {
		c.mu.Unlock()
		return
	}
	es := make([]entry, 0, len(locks))
	for _, e := range locks {
		cp := *e
		cp.dec = nil
		es = append(es, cp)
	}
	c.mu.Unlock()
	slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.Key, b.Key) })
	b, err := json.MarshalIndent(locksFile{Version: 1, Gateway: c.cfg.Name, Entries: es}, "", " ")
	if err != nil {
		c.log.Error("cluster: encode locks", "err", err)
		return
	}
	if bytes.Equal(b, c.locks.last) || (c.locks.last == nil && len(es) == 0) {
		return // unchanged, or no lock ever: no file
	}
	if err := writeFileAtomic(c.locks.path, b); err != nil {
		c.log.Error("cluster: account locks not saved; they hold until this gateway restarts, and after it only if another gateway has them",
			"file", c.locks.path, "err", err)
		return
	}
	c.locks.last, c.locks.sum = b, sum
}

// writeFileAtomic replaces path with b: a temporary file in the same
// directory, synced, renamed over it, the directory synced.
func writeFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // gone after the rename; cleans up after a failure
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
