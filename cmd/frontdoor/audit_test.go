package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/s3sink"
	"github.com/frontdoor-hpc/frontdoor/internal/audit/verify"
)

// awsTestEnv gives the SDK's default credential chain these test keys
// through the environment and nothing else to find.
func awsTestEnv(t *testing.T, keyID, secret string) {
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": keyID, "AWS_SECRET_ACCESS_KEY": secret, "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
}

// frontdoor audit verify against gofakes3, with the gateway's own config:
// a bucket a gateway wrote verifies (exit 0); with one batch deleted it
// reports the gap at its keys and exits 1, in the table and in JSON.
func TestAuditVerifyCommand(t *testing.T) {
	dir := t.TempDir()
	awsTestEnv(t, "AKIDVERIFYTEST", "verify-test-secret")
	backend := s3mem.New()
	if err := backend.CreateBucket("hpc-audit"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	cfg := `gateway: {name: gw1, host_keys: [host], user_ca_key: ca}
backend: {known_hosts: [kh]}
directory: {static: {file: users.yaml}}
policy: {rules: [{name: all, groups: ["*"], pools: [general]}]}
nodes: [{name: login1, addr: "127.0.1.1:22", pool: general}]
audit:
  s3:
    bucket: hpc-audit
    region: us-east-1
    endpoint: ` + srv.URL + `
    path_style: true
    batch_max_events: 4
    spool_dir: spool
`
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	// The gateway ships 10 events: batches 1-3.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sc := s3sink.DefaultConfig()
	sc.Bucket, sc.Region, sc.Endpoint, sc.PathStyle, sc.BatchMaxEvents, sc.SpoolDir = "hpc-audit", "us-east-1", srv.URL, true, 4, filepath.Join(dir, "spool")
	sink, err := s3sink.New(ctx, sc, "gw1", s3sink.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		sink.Record(audit.Event{Time: time.Now(), Type: audit.TypeSessionStart, Gateway: "gw1", User: "alice"})
	}
	if err := sink.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var table bytes.Buffer
	if err := runAuditVerify(ctx, []string{"--config", path}, &table); err != nil {
		t.Fatalf("clean bucket: %v\n%s", err, table.String())
	}
	if !strings.Contains(table.String(), "s3://hpc-audit/audit/: 3 objects, 1 gateways, 1 chains: OK") {
		t.Errorf("table:\n%s", table.String())
	}

	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, Credentials: aws.AnonymousCredentials{}})
	list, err := client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("hpc-audit")})
	if err != nil || len(list.Contents) != 3 {
		t.Fatalf("bucket: %v %v", list, err)
	}
	var seq2 string
	for _, o := range list.Contents {
		if strings.HasSuffix(*o.Key, "-0000000002.jsonl.gz") {
			seq2 = *o.Key
		}
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("hpc-audit"), Key: aws.String(seq2)}); err != nil {
		t.Fatal(err)
	}
	table.Reset()
	if err := runAuditVerify(ctx, []string{"--config", path}, &table); !errors.Is(err, errReported) {
		t.Errorf("a deleted batch: err %v, want exit 1 (errReported)", err)
	}
	if !strings.Contains(table.String(), "1 PROBLEM(S)") || !strings.Contains(table.String(), "seq 2 missing between") {
		t.Errorf("table:\n%s", table.String())
	}
	var js bytes.Buffer
	err = runAuditVerify(ctx, []string{"--config", path, "-o", "json", "s3://hpc-audit/audit"}, &js)
	var rep verify.Report
	if jerr := json.Unmarshal(js.Bytes(), &rep); !errors.Is(err, errReported) || jerr != nil || rep.OK || len(rep.Problems) != 1 ||
		rep.Problems[0].Kind != verify.KindGap || rep.Problems[0].Seq != 3 {
		t.Errorf("json: err %v, %v\n%s", err, jerr, js.String())
	}
	if err := runAuditVerify(ctx, []string{"--config", path, "-o", "yaml"}, &js); !errors.Is(err, errUsage) {
		t.Errorf("-o yaml: %v", err)
	}
}
