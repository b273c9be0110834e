package verify

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for a person: a summary line, the chains,
// objects from before chaining, then every problem with its keys.
func WriteTable(w io.Writer, r *Report) error {
	where := r.Prefix + "/"
	if r.Bucket != "" {
		where = "s3://" + r.Bucket + "/" + where
	}
	gateways := map[string]bool{}
	for _, c := range r.Chains {
		gateways[c.Gateway] = true
	}
	verdict := "OK"
	if !r.OK {
		verdict = fmt.Sprintf("%d PROBLEM(S)", len(r.Problems))
	}
	fmt.Fprintf(w, "%s: %d objects, %d gateways, %d chains: %s\n", where, r.Objects, len(gateways), len(r.Chains), verdict)
	if len(r.Chains) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GATEWAY\tCHAIN\tSEQ\tBATCHES\tEVENTS\tFROM\tTO\tDROPPED\tPROBLEMS\tSTARTED BECAUSE")
		for _, c := range r.Chains {
			started := orDash(c.Started)
			if c.Expired > 0 {
				started = fmt.Sprintf("(seq 1-%d expired)", c.Expired)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d-%d\t%d\t%d\t%s\t%s\t%s\t%d\t%s\n", c.Gateway, c.Name, c.FirstSeq, c.LastSeq, c.Batches, c.Events,
				stamp(c.From), stamp(c.To), drops(c.Dropped), c.Problems, started)
		}
		tw.Flush()
	}
	if len(r.Unchained) > 0 {
		fmt.Fprintln(w, "\nwritten before chaining (not verifiable):")
		for _, u := range r.Unchained {
			fmt.Fprintf(w, "  %s: %d objects, %d events, %s … %s\n", u.Gateway, u.Objects, u.Events, u.FirstKey, u.LastKey)
		}
	}
	if len(r.Problems) > 0 {
		fmt.Fprintln(w, "\nproblems:")
		for _, p := range r.Problems {
			where := p.Key
			if p.Chain != "" {
				where = fmt.Sprintf("%s %s seq %d: %s", p.Gateway, p.Chain, p.Seq, p.Key)
			}
			fmt.Fprintf(w, "  %-14s %s\n  %-14s %s\n", p.Kind, where, "", p.Detail)
		}
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func drops(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range []string{"authenticated", "unauthenticated"} {
		if m[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, m[c]))
		}
	}
	return strings.Join(parts, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
