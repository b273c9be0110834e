package verify

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
)

// found is one object as read and checked on its own.
type found struct {
	obj    Object
	keyErr error // the key is not a batch key: nothing else is known
	key    s3sink.Key
	header *audit.BatchHeader
	hash   string
	events int
	// from and to span the events' times.
	from, to time.Time
	problems []Problem
}

// inspect checks one object against its key: readErr is why it could not
// be read (too large), else body is its content.
func inspect(o Object, k s3sink.Key, body []byte, readErr error) found {
	f := found{obj: o, key: k}
	p := func(kind, format string, args ...any) {
		f.problems = append(f.problems, Problem{Kind: kind, Gateway: k.Gateway, Chain: k.Chain, Seq: k.Seq, Key: o.Key,
			Detail: fmt.Sprintf(format, args...)})
	}
	if readErr != nil {
		p(KindUnreadable, "%v", readErr)
		return f
	}
	b, err := audit.ParseBatch(body)
	f.header, f.hash, f.events = b.Header, b.Hash, len(b.Events)
	if err != nil {
		p(KindUnreadable, "%v", err)
	}
	others := map[string]int{}
	outside := 0
	for i, e := range b.Events {
		if i == 0 || e.Time.Before(f.from) {
			f.from = e.Time
		}
		if i == 0 || e.Time.After(f.to) {
			f.to = e.Time
		}
		if e.Gateway != "" && e.Gateway != k.Gateway {
			others[e.Gateway]++
		}
		if h := b.Header; h != nil && (e.Time.Before(h.First) || e.Time.After(h.Last)) {
			outside++
		}
	}
	for _, g := range slices.Sorted(maps.Keys(others)) {
		p(KindOtherGateway, "%d record(s) name gateway %q; a gateway's batches hold only its own records", others[g], g)
	}
	h := b.Header
	switch {
	case k.Legacy && h != nil:
		p(KindMismatch, "a chain header in an object named like one from before chaining")
	case k.Legacy:
	case h == nil:
		if err == nil {
			p(KindUnreadable, "no batch header: a chained key holds an object without one")
		}
	default:
		if h.V != audit.HeaderVersion {
			p(KindMismatch, "header version %d (this frontdoor reads %d)", h.V, audit.HeaderVersion)
		}
		if h.Gateway != k.Gateway || h.Chain != k.Chain || h.Seq != k.Seq {
			p(KindMismatch, "the header says gateway %q chain %q seq %d; the key says %q %q %d (moved or copied from elsewhere)",
				h.Gateway, h.Chain, h.Seq, k.Gateway, k.Chain, k.Seq)
		}
		if day := h.First.UTC().Truncate(24 * time.Hour); !day.Equal(k.Day) {
			p(KindMismatch, "the first event is on %s; the key is under %s", day.Format(time.DateOnly), k.Day.Format(time.DateOnly))
		}
		if err == nil && h.Events != f.events {
			p(KindMismatch, "the header counts %d events; the object holds %d", h.Events, f.events)
		}
		if outside > 0 {
			p(KindMismatch, "%d event(s) outside the header's time span %s – %s", outside, h.First.Format(time.RFC3339), h.Last.Format(time.RFC3339))
		}
	}
	return f
}

// check puts the objects together: foreign keys, chains, and objects from
// before chaining.
// Objects written before expiring may be the oldest left after a
// lifecycle expiry (zero: nothing expires).
func check(prefix string, objs []found, expiring time.Time) *Report {
	r := &Report{Prefix: prefix, Chains: []Chain{}, Problems: []Problem{}}
	chains := map[[2]string][]*found{}
	legacy := map[string][]*found{}
	firstChained := map[string]time.Time{} // gateway → its first chained object's Modified
	for i := range objs {
		f := &objs[i]
		if f.keyErr != nil {
			r.Problems = append(r.Problems, Problem{Kind: KindForeign, Key: f.obj.Key,
				Detail: fmt.Sprintf("not a batch of any gateway: %v", f.keyErr)})
			continue
		}
		r.Problems = append(r.Problems, f.problems...)
		if f.key.Legacy {
			legacy[f.key.Gateway] = append(legacy[f.key.Gateway], f)
			continue
		}
		id := [2]string{f.key.Gateway, f.key.Chain}
		chains[id] = append(chains[id], f)
		if t, ok := firstChained[f.key.Gateway]; !ok || f.obj.Modified.Before(t) {
			firstChained[f.key.Gateway] = f.obj.Modified
		}
	}
	for _, id := range slices.SortedFunc(maps.Keys(chains), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		c, problems := checkChain(chains[id], expiring)
		r.Chains = append(r.Chains, c)
		r.Problems = append(r.Problems, problems...)
	}
	for _, g := range slices.Sorted(maps.Keys(legacy)) {
		u := Unchained{Gateway: g}
		fs := legacy[g]
		slices.SortFunc(fs, func(a, b *found) int { return cmp.Compare(a.obj.Key, b.obj.Key) })
		for _, f := range fs {
			u.Objects++
			u.Events += f.events
			if first, ok := firstChained[g]; ok && f.obj.Modified.After(first) {
				r.Problems = append(r.Problems, Problem{Kind: KindLate, Gateway: g, Key: f.obj.Key,
					Detail: fmt.Sprintf("an object in the layout from before chaining, written %s, after %s's first chained batch (%s): is an old IAM policy still attached?",
						f.obj.Modified.UTC().Format(time.RFC3339), g, first.UTC().Format(time.RFC3339))})
			}
		}
		u.FirstKey, u.LastKey = fs[0].obj.Key, fs[len(fs)-1].obj.Key
		r.Unchained = append(r.Unchained, u)
	}
	slices.SortStableFunc(r.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Gateway, b.Gateway), cmp.Compare(a.Chain, b.Chain), cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.Key, b.Key))
	})
	r.OK = len(r.Problems) == 0
	return r
}

// checkChain checks one chain's objects (one gateway, one chain name) for
// gaps, duplicates and links.
func checkChain(objs []*found, expiring time.Time) (Chain, []Problem) {
	slices.SortFunc(objs, func(a, b *found) int {
		return cmp.Or(cmp.Compare(a.key.Seq, b.key.Seq), cmp.Compare(a.obj.Key, b.obj.Key))
	})
	first, last := objs[0], objs[len(objs)-1]
	c := Chain{Gateway: first.key.Gateway, Name: first.key.Chain, FirstSeq: first.key.Seq, LastSeq: last.key.Seq,
		FirstKey: first.obj.Key, LastKey: last.obj.Key}
	var problems []Problem
	p := func(f *found, kind, other, format string, args ...any) {
		problems = append(problems, Problem{Kind: kind, Gateway: c.Gateway, Chain: c.Name, Seq: f.key.Seq, Key: f.obj.Key, Other: other,
			Detail: fmt.Sprintf(format, args...)})
	}
	var prev *found // the batch before, as linked
	expect := uint64(1)
	for i := 0; i < len(objs); {
		// The objects with this seq: normally one.
		j := i + 1
		for j < len(objs) && objs[j].key.Seq == objs[i].key.Seq {
			j++
		}
		group := objs[i:j]
		seq := group[0].key.Seq
		if seq > expect {
			if prev == nil && group[0].obj.Modified.Before(expiring) {
				c.Expired = seq - 1 // the head of the chain expired, as the lifecycle says
			} else if prev == nil {
				p(group[0], KindGap, "", "seq %s missing: the chain's first batch found is seq %d", span(expect, seq-1), seq)
			} else {
				p(group[0], KindGap, prev.obj.Key, "seq %s missing between %s and %s", span(expect, seq-1), prev.obj.Key, group[0].obj.Key)
			}
		}
		// Of duplicates, the chain's is the one that links and agrees with
		// its own key; the others are reported.
		rep, best := group[0], -1
		for _, f := range group {
			score := 0
			if f.header != nil && prev != nil && prev.key.Seq+1 == seq && f.header.Prev == prev.hash {
				score += 2
			}
			if len(f.problems) == 0 {
				score++
			}
			if score > best {
				rep, best = f, score
			}
		}
		for _, f := range group {
			if f != rep {
				p(f, KindDuplicate, rep.obj.Key, "seq %d twice: %s and %s", seq, rep.obj.Key, f.obj.Key)
			}
		}
		if h := rep.header; h != nil {
			switch {
			case seq == 1 && h.Prev != "":
				p(rep, KindBadStart, "", "the first batch of a chain links to a previous one (prev %s)", short(h.Prev))
			case seq == 1 && h.Restart == "":
				p(rep, KindBadStart, "", "the first batch of a chain does not say why the chain began")
			case seq > 1 && h.Prev == "":
				p(rep, KindBadStart, "", "seq %d links to nothing: only seq 1 may", seq)
			case prev != nil && prev.key.Seq+1 == seq && h.Prev != prev.hash:
				p(rep, KindBreak, prev.obj.Key, "does not link to %s (prev %s, that object hashes to %s): %s was changed after this batch was written, or this batch was not written after it",
					prev.obj.Key, short(h.Prev), short(prev.hash), prev.obj.Key)
			}
			if seq == 1 {
				c.Started = h.Restart
			}
			for class, n := range h.Dropped {
				if c.Dropped == nil {
					c.Dropped = map[string]int64{}
				}
				c.Dropped[class] += n
			}
		}
		for _, f := range group {
			c.Batches++
			c.Events += f.events
			if f.events > 0 && (c.From.IsZero() || f.from.Before(c.From)) {
				c.From = f.from
			}
			if f.to.After(c.To) {
				c.To = f.to
			}
		}
		prev, expect, i = rep, seq+1, j
	}
	c.Problems = len(problems)
	for _, o := range objs {
		c.Problems += len(o.problems)
	}
	return c, problems
}

func span(a, b uint64) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d-%d", a, b)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
