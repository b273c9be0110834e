package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/verify"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
	fdusage "github.com/frontdoor-hpc/frontdoor/internal/usage"
)

func init() {
	register("audit verify", "check the audit bucket: every gateway's hash chain, gaps, changed, moved or foreign objects; exit 1 on any problem", func(ctx context.Context, args []string) error {
		return runAuditVerify(ctx, args, os.Stdout)
	})
}

const auditVerifyUsage = "frontdoor audit verify [--config FILE] [--gateway NAME] [--retention-days N] [-o table|json] [--timeout D] [s3://bucket/prefix]"

func runAuditVerify(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("audit verify", flag.ContinueOnError)
	path := fs.String("config", config.DefaultPath, "gateway configuration file: its audit.s3 section names the bucket, prefix, region and endpoint (not read when only s3://bucket/prefix is given)")
	format := fs.String("o", "table", "output: table or json")
	gateway := fs.String("gateway", "", "verify only this gateway's prefix")
	timeout := fs.Duration("timeout", 30*time.Minute, "limit for the whole command")
	concurrency := fs.Int("concurrency", 8, "objects read at once")
	retention := fs.Int("retention-days", 0, "the bucket's lifecycle expiry in days (0: none): a chain whose oldest batches are gone is fine when what is left is that old")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 1 || (*format != "table" && *format != "json") || *concurrency < 1 || *retention < 0 {
		return fmt.Errorf("%w: %s", errUsage, auditVerifyUsage)
	}
	// The bucket and how to reach it: the audit.s3 section (the sink's own
	// endpoint and region); a URL names another bucket or prefix, and on a
	// machine without a gateway configuration it is enough (the SDK's
	// region and credentials).
	configGiven := false
	fs.Visit(func(f *flag.Flag) { configGiven = configGiven || f.Name == "config" })
	sc := s3sink.DefaultConfig()
	if configGiven || fs.NArg() == 0 {
		cfg, err := config.Load(*path)
		if err != nil {
			return err
		}
		if cfg.Audit.S3 == nil && fs.NArg() == 0 {
			return fmt.Errorf("%s has no audit.s3 section; name the bucket: %s", cfg.Path(), auditVerifyUsage)
		}
		if cfg.Audit.S3 != nil {
			sc = *cfg.Audit.S3
		}
	}
	if fs.NArg() == 1 {
		var err error
		if sc.Bucket, sc.Prefix, err = fdusage.ParseS3URL(fs.Arg(0)); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	client, tr, err := s3sink.NewClient(ctx, sc)
	if err != nil {
		return err
	}
	defer tr.CloseIdleConnections()
	rep, err := verify.Verify(ctx, verify.S3{API: client, Bucket: sc.Bucket, CallTimeout: time.Minute},
		verify.Options{Prefix: sc.Prefix, Gateway: *gateway, Concurrency: *concurrency, RetentionDays: *retention})
	if err != nil {
		return fmt.Errorf("audit verify: %w", err)
	}
	rep.Bucket = sc.Bucket
	if *format == "json" {
		err = verify.WriteJSON(out, rep)
	} else {
		err = verify.WriteTable(out, rep)
	}
	if err != nil {
		return err
	}
	if !rep.OK {
		return errReported
	}
	return nil
}
