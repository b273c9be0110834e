package adversarial_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"slices"
	"testing"
	"time"

	rawssh "github.com/frontdoor-hpc/frontdoor/test/adversarial/internal/rawssh"
)

// How fast are refusals of unknown and known names (issue 8, part 6)? A
// measurement, not a timed test: on a shared 2-core machine any timing
// assertion would be noise or a flake. The medians go to the test log;
// targets belong to `make bench`. The test itself checks only that every
// attempt is refused.
func TestRefusalTimingMedians(t *testing.T) {
	const rounds = 15
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	stranger, err := rawssh.NewPublicKey(priv.Public())
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, gwOptions{})
	classes := []struct {
		name string
		user func(i int) string
		req  func(user string) rawssh.AuthRequest
	}{
		{"key, known user", func(int) string { return aliceName }, keyQuery(stranger)},
		{"key, unknown user (new each time)", func(i int) string { return fmt.Sprintf("adv-nobody-%d-%d", time.Now().UnixNano(), i) }, keyQuery(stranger)},
		{"key, unknown user (repeated)", func(int) string { return "adv-nobody" }, keyQuery(stranger)},
		{"password, known user", func(int) string { return aliceName }, passwordReq},
		{"password, unknown user", func(i int) string { return fmt.Sprintf("adv-nobody-pw-%d", i) }, passwordReq},
	}
	times := make([][]time.Duration, len(classes))
	for i := range rounds { // interleaved, so load drifts hit every class alike
		for c, cl := range classes {
			rc := dialRaw(t, g, "")
			userauth(t, rc)
			user := cl.user(i)
			start := time.Now()
			r, err := rc.Auth(cl.req(user))
			d := time.Since(start)
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %v", cl.name, err)
			}
			if r.Kind != rawssh.ReplyFailure {
				t.Fatalf("%s (%s): %s, want refused", cl.name, user, r.Kind)
			}
			times[c] = append(times[c], d)
		}
	}
	for c, cl := range classes {
		ds := slices.Clone(times[c])
		slices.Sort(ds)
		t.Logf("refusal latency, %-34s median %7v  min %7v  max %7v  (n=%d, first refusal on each connection)",
			cl.name+":", ds[len(ds)/2].Round(100*time.Microsecond), ds[0].Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond), len(ds))
	}
}

func keyQuery(k rawssh.PublicKey) func(string) rawssh.AuthRequest {
	return func(user string) rawssh.AuthRequest { return rawssh.PublicKeyQuery(user, k, "") }
}

func passwordReq(user string) rawssh.AuthRequest {
	return rawssh.PasswordRequest(user, "Wrong-Passw0rd!")
}
