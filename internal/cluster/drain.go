package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Maintenance drains: an admin drain (d/NODE) that also carries a deadline,
// when every session still on the node is closed, and a message its users
// are told. The gateways hold it in their shared state like any drain, so
// it reaches every gateway, survives a reload, an upgrade or a restart of
// any one of them, and each gateway closes its own sessions at the
// deadline (internal/maintenance).
//
// Merge rule: d/NODE is a shared key, so the last writer wins by (Ver,
// Origin) as for every shared key (state.go): the latest admin command is
// the intent — a deadline moved later or sooner, another message, an
// undrain — and two gateways written to at the same moment end up with
// the same winner everywhere. The one writer that must not simply win is
// automatic: HyperPod discovery runs on every gateway and would push the
// deadline later with each gateway that notices the same maintenance, so
// it drains only a node without a drain that ends sooner (DrainIfSooner).
//
// Gossip is hostile input: a drain from a peer is refused (bad_drain in
// frontdoor_gossip_refused_total) unless its message and author are short,
// valid UTF-8 without control, bidi or line-separator characters — the
// message is written to users' terminals — and its deadline and expiry lie
// within the bounds a gateway itself would write (checkDrainEntry). The
// local writer checks the same, so what one gateway writes every other
// takes.

// Bounds of a maintenance drain.
const (
	// MaxDrainMessage is the longest message, in bytes: it must fit one
	// terminal line with the rest of the notice.
	MaxDrainMessage = 200
	// MaxDrainDeadline is how far ahead a deadline may be.
	MaxDrainDeadline = 7 * 24 * time.Hour
	// maxDrainBy bounds the recorded author.
	maxDrainBy = 128
)

// refusedDrain: a drain entry outside those bounds.
const refusedDrain = "bad_drain"

// ErrDrainMessage and ErrDrainDeadline say why a drain is refused.
var (
	ErrDrainMessage  = errors.New("drain message")
	ErrDrainDeadline = errors.New("drain deadline")
)

// CheckDrainText reports whether s may be written to a terminal inside a
// notice: valid UTF-8, at most max bytes, without control characters
// (escape sequences, newlines, carriage returns, C1 controls), bidi
// controls (which reorder what the user sees) or line and paragraph
// separators. It refuses rather than cleans: an admin learns at once that
// the text is not what users would see.
func CheckDrainText(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%d bytes, at most %d", len(s), max)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	if i := strings.IndexFunc(s, badNoticeRune); i >= 0 {
		r, _ := utf8.DecodeRuneInString(s[i:])
		return fmt.Errorf("character %U at byte %d: no control, bidi or line-separator characters", r, i)
	}
	return nil
}

func badNoticeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.In(r, unicode.Zl, unicode.Zp)
}

// CheckDrainDeadline reports whether deadline may be set at now: in the
// future, at most MaxDrainDeadline ahead.
func CheckDrainDeadline(deadline, now time.Time) error {
	switch {
	case !deadline.After(now):
		return fmt.Errorf("%w: %s is not in the future", ErrDrainDeadline, deadline.UTC().Format(time.RFC3339))
	case deadline.Sub(now) > MaxDrainDeadline:
		return fmt.Errorf("%w: %s is more than %s ahead", ErrDrainDeadline, deadline.UTC().Format(time.RFC3339), MaxDrainDeadline)
	}
	return nil
}

// MaintenanceDrain is a node's drain with its deadline and message, as
// gateways read it.
type MaintenanceDrain struct {
	Node string
	// By is who drained it: an admin identity, or "hyperpod" for
	// discovery's own drains.
	By       string
	Deadline time.Time // zero: a drain without a deadline
	Message  string
}

// DrainUntil drains node cluster-wide until an undrain, and has every
// gateway close the sessions still on it at deadline, telling their users
// message (checked with CheckDrainText and CheckDrainDeadline).
func (c *Cluster) DrainUntil(node string, deadline time.Time, message, by string) error {
	v, err := c.maintenanceVal(deadline, message, by)
	if err != nil {
		return err
	}
	return c.write(kindDrain+"/"+node, v)
}

// DrainIfSooner is DrainUntil unless node has a drain whose deadline is
// not later than deadline (or which has none: an admin holds the node out
// already and decides when it ends): an automatic drain must not push a
// deadline later. It reports whether it wrote.
func (c *Cluster) DrainIfSooner(node string, deadline time.Time, message, by string) (bool, error) {
	v, err := c.maintenanceVal(deadline, message, by)
	if err != nil {
		return false, err
	}
	key := kindDrain + "/" + node
	c.mu.Lock()
	if e := c.st.live(key); e != nil {
		if cur, ok := decode[drainVal](e); ok && cur.Draining && (cur.Deadline.IsZero() || !cur.Deadline.After(deadline)) {
			c.mu.Unlock()
			return false, nil
		}
	}
	e, err := c.st.put(key, v, c.now())
	c.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("cluster: encode %s: %w", key, err)
	}
	c.send(e)
	return true, nil
}

// UndrainIf ends node's drain if it is still one by (an automatic drain
// whose cause has passed; an admin's drain of the same node stays), and
// reports whether it did.
func (c *Cluster) UndrainIf(node, by string) (bool, error) {
	key := kindDrain + "/" + node
	c.mu.Lock()
	e := c.st.live(key)
	var cur drainVal
	if e != nil {
		cur, _ = decode[drainVal](e)
	}
	if !cur.Draining || cur.By != by {
		c.mu.Unlock()
		return false, nil
	}
	ne, err := c.st.put(key, drainVal{By: by}, c.now())
	c.mu.Unlock()
	if err != nil {
		return false, fmt.Errorf("cluster: encode %s: %w", key, err)
	}
	c.send(ne)
	return true, nil
}

// maintenanceVal is the value of a drain with a deadline, checked. It
// lasts DrainTTL past its deadline, like a plain drain past its start.
func (c *Cluster) maintenanceVal(deadline time.Time, message, by string) (drainVal, error) {
	now := c.now()
	if err := CheckDrainDeadline(deadline, now); err != nil {
		return drainVal{}, err
	}
	if err := CheckDrainText(message, MaxDrainMessage); err != nil {
		return drainVal{}, fmt.Errorf("%w: %v", ErrDrainMessage, err)
	}
	if err := CheckDrainText(by, maxDrainBy); err != nil {
		return drainVal{}, fmt.Errorf("drain author: %v", err)
	}
	return drainVal{Draining: true, By: by, Deadline: deadline.Round(time.Millisecond), Message: message,
		Until: deadline.Add(c.cfg.DrainTTL)}, nil
}

// Drains lists the admin drains in force (with or without a deadline),
// sorted by node.
func (c *Cluster) Drains() []MaintenanceDrain {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []MaintenanceDrain
	for k, e := range c.st.byKind[kindDrain] {
		if v, ok := decode[drainVal](e); ok && v.Draining {
			out = append(out, MaintenanceDrain{Node: strings.TrimPrefix(k, kindDrain+"/"), By: v.By,
				Deadline: v.Deadline, Message: v.Message})
		}
	}
	slices.SortFunc(out, func(a, b MaintenanceDrain) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// checkDrainEntry refuses a gossiped drain that no gateway would write
// (the package comment above). Other kinds pass.
func (c *Cluster) checkDrainEntry(e *entry, now time.Time) error {
	if e.Del || !strings.HasPrefix(e.Key, kindDrain+"/") {
		return nil
	}
	v, ok := decode[drainVal](e)
	if !ok {
		return refuse(refusedMalformed, "%s: drain value", clip(e.Key))
	}
	if err := CheckDrainText(v.Message, MaxDrainMessage); err != nil {
		return refuse(refusedDrain, "%s from %s: message: %v", e.Key, e.Origin, err)
	}
	if err := CheckDrainText(v.By, maxDrainBy); err != nil {
		return refuse(refusedDrain, "%s from %s: author: %v", e.Key, e.Origin, err)
	}
	ahead := now.Add(c.cfg.MaxClockSkew)
	if !v.Deadline.IsZero() && v.Deadline.After(ahead.Add(MaxDrainDeadline)) {
		return refuse(refusedDrain, "%s from %s: deadline %s is more than %s ahead", e.Key, e.Origin,
			v.Deadline.UTC().Format(time.RFC3339), MaxDrainDeadline)
	}
	if v.Until.After(ahead.Add(MaxDrainDeadline + c.cfg.DrainTTL)) {
		return refuse(refusedDrain, "%s from %s: lasts until %s", e.Key, e.Origin, v.Until.UTC().Format(time.RFC3339))
	}
	return nil
}
