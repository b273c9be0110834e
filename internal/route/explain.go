package route

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// Explain renders a decision as the table `frontdoor explain USER` prints:
// one line per node with candidacy, reason, score and rank, then the
// decision. err is Decide's error, if any.
func Explain(user string, d Decision, err error) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tCANDIDATE\tSCORE\tRANK\tWHY NOT")
	for _, v := range d.Verdicts {
		cand, score, rank := "no", "-", "-"
		if v.Candidate {
			cand, score = "yes", fmt.Sprintf("%.3f", v.Score)
		}
		if v.Rank > 0 {
			rank = fmt.Sprint(v.Rank)
		}
		why := v.Why
		if why == "" {
			why = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Node.Name, v.Node.Pool, cand, score, rank, why)
	}
	tw.Flush()
	switch {
	case err != nil:
		fmt.Fprintf(&b, "decision for %s: refused: %v (%s)\n", user, err, d.Reason)
	default:
		fmt.Fprintf(&b, "decision for %s: %s, try %s\n", user, d.Reason, strings.Join(Names(d.Order), " → "))
	}
	return b.String()
}

// Names lists the names of nodes, in order.
func Names(nodes []node.Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Name
	}
	return out
}
