package adversarial_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/config"
	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// Unauthenticated clients must not spend everyone's allowance (issue 8,
// part 4). One source (127.0.0.2) opens floodSize TCP connections as fast
// as it can and keeps them open: half send an SSH version line and then
// nothing, half send nothing at all. While they are held, a user from
// another source (127.0.0.3) logs in within loginDeadline, and the
// flooding source itself is refused by the per-source limit
// (gateway.per_source_max_startups / per_source_rate), as the gateway log
// says.
func TestPreAuthFloodFromOneSource(t *testing.T) {
	const (
		floodSize      = 300
		perSourceMax   = 10
		perSourceBurst = 20
		loginDeadline  = 10 * time.Second
	)
	g := newGateway(t, gwOptions{Edit: func(c *config.Config) {
		g := &c.Gateway
		g.MaxStartups, g.PerSourceMaxStartups, g.PerSourceRate, g.PerSourceBurst = 100, perSourceMax, 2, perSourceBurst
		// Silent connections are held for the whole test.
		g.HandshakeTimeout, g.AuthTimeout = 20*time.Second, 30*time.Second
	}})

	// Open the flood; each connection reports whether the gateway
	// answered with its version (admitted) or closed it unanswered.
	type result struct{ admitted, refused, other int }
	var mu sync.Mutex
	var res result
	var held []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	t0 := time.Now()
	for i := range floodSize {
		nc, err := dialTCP(t.Context(), g, "127.0.0.2")
		if err != nil {
			t.Fatalf("flood connection %d: %v", i, err)
		}
		mu.Lock()
		held = append(held, nc)
		mu.Unlock()
		if i%2 == 0 {
			if _, err := nc.Write([]byte("SSH-2.0-flood\r\n")); err != nil && !errors.Is(err, net.ErrClosed) {
				// The gateway may have closed it already.
				t.Logf("flood write %d: %v", i, err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(nc).ReadString('\n')
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && bytes.HasPrefix([]byte(line), []byte("SSH-2.0-")):
				res.admitted++
			case errors.Is(err, io.EOF) || isReset(err):
				res.refused++
			default:
				res.other++
				t.Logf("flood connection: %q %v", line, err)
			}
		}()
	}
	opened := time.Since(t0)
	wg.Wait()
	t.Logf("flood: %d connections from 127.0.0.2 opened in %v: %d admitted (got the gateway's version), %d closed unanswered, %d other",
		floodSize, opened.Round(time.Millisecond), res.admitted, res.refused, res.other)
	// Admitted ones stay open (held): at most per_source_max_startups at
	// once, plus what the rate refilled while the flood was opening.
	if res.admitted > perSourceMax {
		t.Errorf("%d flood connections admitted at once, per_source_max_startups is %d", res.admitted, perSourceMax)
	}
	if res.admitted+res.refused+res.other != floodSize || res.refused < floodSize-perSourceBurst {
		t.Errorf("flood: %+v of %d", res, floodSize)
	}

	// Another source logs in while the flood is held (the connection's
	// own deadline bounds a hang; the figure is judged after).
	start := time.Now()
	loginAs(t, g, "127.0.0.3", bob)
	took := time.Since(start)
	t.Logf("login from 127.0.0.3 during the flood: %v", took.Round(time.Millisecond))
	if took > loginDeadline {
		t.Errorf("a login from 127.0.0.3 took %v during a flood from 127.0.0.2, want under %v", took, loginDeadline)
	}

	// The flooding source itself is refused, even for an honest login.
	if rc, err := tryDialRaw(t.Context(), g, "127.0.0.2"); err == nil {
		rc.Close()
		t.Errorf("127.0.0.2 completed a key exchange while its flood is held")
	}
	reasons := refusals(t, filepath.Join(filepath.Dir(g.AuditFile()), "gateway.log"))
	t.Logf("gateway log, connections refused by reason: %v", reasons)
	if reasons["per_source_max_startups"]+reasons["per_source_rate"] < floodSize-perSourceBurst {
		t.Errorf("refusals by the per-source limits: %v, want at least %d", reasons, floodSize-perSourceBurst)
	}
	if reasons["max_startups"] != 0 {
		t.Errorf("one source filled the gateway's max_startups: %v", reasons)
	}

	// Released: once the flood goes away the source may connect again.
	mu.Lock()
	for _, c := range held {
		c.Close()
	}
	held = nil
	mu.Unlock()
	if err := waitDial(t, g, "127.0.0.2"); err != nil {
		t.Errorf("127.0.0.2 after its flood ended: %v", err)
	}
}

// waitDial waits (the places are released as the gateway notices the
// closed connections, and the rate refills) until src completes a key
// exchange.
func waitDial(t *testing.T, g interface{ Addr() string }, src string) error {
	t.Helper()
	var last error
	deadline := time.Now().Add(20 * time.Second)
	for pause := 10 * time.Millisecond; time.Now().Before(deadline); pause = min(2*pause, 500*time.Millisecond) {
		var rc *rawssh.RawConn
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		nc, err := d.DialContext(t.Context(), "tcp", g.Addr())
		if err == nil {
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			rc, err = rawssh.NewRawConn(nc, g.Addr(), &rawssh.ClientConfig{HostKeyCallback: rawssh.InsecureIgnoreHostKey()})
		}
		if err == nil {
			rc.Close()
			return nil
		}
		last = err
		tm := time.NewTimer(pause)
		select {
		case <-t.Context().Done():
			tm.Stop()
			return t.Context().Err()
		case <-tm.C:
		}
	}
	return fmt.Errorf("gave up: %w", last)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// refusals counts the gateway log's "connection refused" lines by reason
// (the harness gateway logs JSON lines to gateway.log next to its config).
func refusals(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Msg    string `json:"msg"`
			Reason string `json:"reason"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "connection refused" {
			out[l.Reason]++
		}
	}
	return out
}
