package gateway

import (
	"context"
	"time"
)

// When refusals are sent. A client that proved nothing must not learn from
// them which accounts exist (DESIGN.md, "Who trusts whom"), and what it
// can time is every answer before proof. Unpadded, they differ: a real
// account costs three directory searches and an unknown name one; the
// directory caches accounts for minutes and unknown names for seconds; a
// password check binds to AD only for an account that exists; and a slow
// directory stretches all of it. No floor computed from recent lookups can
// cover that (the slowest cold search is what gives an account away, and a
// client can steer such statistics). So no answer before proof waits on
// the directory for a time that depends on it:
//
//   - none is refused at once. It starts the name's lookup in the
//     background (through the lookup gate), so the key query that follows
//     usually finds the answer ready.
//   - A public key is refused key_refusal_delay after the connection first
//     named the user (none or the query itself): if the lookup ended
//     sooner, the refusal waits for that moment; if it has not ended by
//     then, what the directory's cache last knew of the name decides
//     whether the client may go on to prove the key (the login waits for
//     the fresh answer after the proof), and without it the key is refused
//     unseen (the lookup goes on and caches its answer for the client's
//     next connection). Once a key was refused for a name, later refusals
//     for it on the connection go at once, known name or not. An
//     acceptable key is answered as soon as it is known to be one: that
//     proves nothing to a stranger who lacks the key.
//   - A password (or keyboard-interactive answer) is refused
//     password_refusal_delay after it arrived; a check the directory has
//     not answered by then goes on in the background and the attempt is
//     refused. A right password logs in as soon as the directory says so.
//
// What a stranger measures is then the configured delays plus the
// machine's scheduling, the same for every name; how fast the directory
// answered, and from which cache, stays inside the gateway. Refusals that
// depend only on what the client itself sent (a malformed name, a
// certificate) go at once. test/adversarial's TestRefusalTimingIndependent
// measures it against Samba behind a slow link; BENCHMARKS.md has figures.

// sleepUntil waits until t (or ctx ends).
func sleepUntil(ctx context.Context, t time.Time) {
	d := time.Until(t)
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}

// waitUntil waits until done is closed or t passes (or ctx ends), and
// reports whether done was closed.
func waitUntil(ctx context.Context, done <-chan struct{}, t time.Time) bool {
	tm := time.NewTimer(max(time.Until(t), 0))
	defer tm.Stop()
	select {
	case <-done:
		return true
	case <-tm.C:
	case <-ctx.Done():
	}
	select { // both ready: the answer wins
	case <-done:
		return true
	default:
		return false
	}
}
