package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

func init() {
	register("mfa", "mfa revoke USER: end USER's second-factor unlocks on every gateway (admin API)", stdout(runMFA))
}

func runMFA(ctx context.Context, args []string, out io.Writer) error {
	const usage = "frontdoor mfa revoke " + adminUsage + " [--comment TEXT] USER"
	if len(args) == 0 || args[0] != "revoke" {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	fs, a, o := adminFlags("mfa revoke")
	comment := fs.String("comment", "", "why, for the log and audit trail")
	if err := parseFlags(fs, args[1:], usage, o, tableJSON...); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: %s", errUsage, usage)
	}
	body, err := json.Marshal(map[string]string{"user": fs.Arg(0), "comment": sudoNote(*comment)})
	if err != nil {
		return err
	}
	var res struct {
		User    string `json:"user"`
		Revoked bool   `json:"revoked"`
		By      string `json:"by"`
	}
	if err := a.post(ctx, "/v1/mfa/revoke", body, &res); err != nil {
		return err
	}
	if *o == "json" {
		return writeJSON(out, res)
	}
	fmt.Fprintf(out, "%s: second-factor unlocks revoked on every gateway (by %s)\n", res.User, res.By)
	return nil
}
