package s3sink

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
)

// onlyChain returns the bucket's one chain, checked link by link.
func onlyChain(t *testing.T, f *fakeS3) []audit.Batch {
	t.Helper()
	chains := f.chains(t)
	if len(chains) != 1 {
		t.Fatalf("%d chains, want 1", len(chains))
	}
	for _, c := range chains {
		return c
	}
	return nil
}

// withSpool is a bucket and a spool directory that outlives one sink.
func withSpool(t *testing.T) (*fakeS3, string, Config) {
	f := startS3(t)
	spool := t.TempDir()
	return f, spool, testConfig(f, spool)
}

// The chain goes on across a clean restart; a spool whose chain state is
// gone, or unreadable, starts a new chain that says why — never a silent
// new start, never a guess.
func TestChainAcrossRestarts(t *testing.T) {
	f, spool, cfg := withSpool(t)
	s := newSink(t, cfg, nil)
	record(s, 0, 15)
	closeSink(t, s)
	s = newSink(t, cfg, nil)
	record(s, 15, 5)
	closeSink(t, s)
	c := onlyChain(t, f)
	if len(c) != 3 || c[2].Header.Restart != "" {
		t.Fatalf("after a restart: %d batches, last restart %q; want 3 in one chain", len(c), c[2].Header.Restart)
	}

	for _, tc := range []struct {
		name, want string
		damage     func(path string) error
	}{
		{"lost", restartNoState, os.Remove},
		{"unreadable", restartUnreadable, func(p string) error { return os.WriteFile(p, []byte(`{"chain":`), 0o600) }},
		{"inconsistent", restartUnreadable, func(p string) error {
			return os.WriteFile(p, []byte(`{"v":1,"gateway":"gw1","chain":"20261203T060102Z-1a2b3c4d","seq":7}`), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.chains(t)
			if err := tc.damage(filepath.Join(spool, chainFile)); err != nil {
				t.Fatal(err)
			}
			s := newSink(t, cfg, nil)
			record(s, 100, 2)
			closeSink(t, s)
			after := f.chains(t)
			if len(after) != len(before)+1 {
				t.Fatalf("%d chains, want a new one besides the %d", len(after), len(before))
			}
			for name, c := range after {
				if before[name] != nil {
					continue
				}
				if h := c[0].Header; h.Seq != 1 || h.Prev != "" || !strings.HasPrefix(h.Restart, tc.want) {
					t.Errorf("new chain starts with %+v, want restart %q", h, tc.want)
				}
			}
		})
	}
}

// A crash after the link file is written but before the chain state is:
// at start the chain goes on from the link file, and the body it came
// from is not linked twice.
func TestCrashBetweenLinkAndChainState(t *testing.T) {
	f, spool, cfg := withSpool(t)
	s := newSink(t, cfg, nil)
	record(s, 0, 10)
	eventually(t, "first batch uploaded", func() bool { return len(f.contents(t)) == 1 })
	stateAfter1, err := os.ReadFile(filepath.Join(spool, chainFile))
	if err != nil {
		t.Fatal(err)
	}
	f.setMode(modeRefuse)
	record(s, 10, 10)
	eventually(t, "second batch linked", func() bool {
		m, _ := filepath.Glob(filepath.Join(spool, "link-*"))
		return len(m) == 1
	})
	crash(t, s)
	// Undo the last two steps of linking: the state as it was before, the
	// body back beside its link file.
	link, _ := filepath.Glob(filepath.Join(spool, "link-*"))
	lb, ok := parseBatchFile(filepath.Base(link[0]))
	if !ok {
		t.Fatal(link)
	}
	obj, _ := os.ReadFile(link[0])
	os.WriteFile(filepath.Join(spool, chainFile), stateAfter1, 0o600)
	b, err := audit.ParseBatch(obj)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, e := range b.Events {
		line, _ := json.Marshal(e)
		raw = append(append(raw, line...), '\n')
	}
	body := batchFile{kind: "body", class: audit.ClassAuthenticated, id: lb.id}
	os.WriteFile(filepath.Join(spool, body.name()), gzipBytes(raw), 0o600)

	f.setMode(modeNormal)
	s = newSink(t, cfg, nil)
	record(s, 20, 3)
	closeSink(t, s)
	c := onlyChain(t, f)
	if len(c) != 3 {
		t.Errorf("%d batches, want 3 (the recovered link not duplicated)", len(c))
	}
	counts, total := f.sessionCounts(t)
	if total != 23 || len(counts) != 23 {
		t.Errorf("%d events, %d distinct; want 23 once each", total, len(counts))
	}
}

// A spool of the previous layout (DATE_GATEWAY-SEQ.jsonl[.gz] and seq),
// left by an upgrade during an outage, is uploaded into the chain.
func TestOldSpoolLayoutTakenOver(t *testing.T) {
	f := startS3(t)
	spool := t.TempDir()
	line := func(id string) string {
		return `{"time":"2026-12-03T06:00:00Z","type":"session.start","gateway":"gw1","session":"` + id + `","user":"alice"}` + "\n"
	}
	os.WriteFile(filepath.Join(spool, "2026-12-03_gw1-0000000041.jsonl.gz"), gzipBytes([]byte(line("old1")+line("old2"))), 0o600)
	os.WriteFile(filepath.Join(spool, "2026-12-03_gw1-0000000042.jsonl"), []byte(line("old3")+`{"time":"2026-12-03T06:0`), 0o600)
	// A seal that finished all but removing its open file.
	os.WriteFile(filepath.Join(spool, "2026-12-03_gw1-0000000040.jsonl.gz"), gzipBytes([]byte(line("old0"))), 0o600)
	os.WriteFile(filepath.Join(spool, "2026-12-03_gw1-0000000040.jsonl"), []byte(line("old0")), 0o600)
	os.WriteFile(filepath.Join(spool, "seq"), []byte("42\n"), 0o600)
	s := newSink(t, testConfig(f, spool), nil)
	closeSink(t, s)
	counts, total := f.sessionCounts(t)
	if total != 4 || counts["old0"] != 1 || counts["old3"] != 1 {
		t.Errorf("uploaded %v", counts)
	}
	if c := onlyChain(t, f); len(c) != 3 {
		t.Errorf("%d batches, want 3", len(c))
	}
	if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 1 {
		t.Errorf("spool after: %v", left)
	}
}
