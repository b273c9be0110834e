package assembly

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
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
	"golang.org/x/crypto/ssh"

	"github.com/frontdoor-hpc/frontdoor/internal/admin"
	"github.com/frontdoor-hpc/frontdoor/internal/audit"
	"github.com/frontdoor-hpc/frontdoor/internal/ca"
	"github.com/frontdoor-hpc/frontdoor/internal/config"
)

// A whole gateway process as `frontdoor gateway` runs it: with an audit.s3
// section it ships its audit events to the bucket (Close flushes them), and
// its admin API serves the metrics of every part.
func TestGatewayProcess(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDGATEWAYTEST", "AWS_SECRET_ACCESS_KEY": "gateway-test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	backend := s3mem.New()
	if err := backend.CreateBucket("gw-audit"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()

	hostPub, err := ca.GenerateKeyFile(filepath.Join(dir, "host"), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.GenerateKeyFile(filepath.Join(dir, "ca"), ""); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "users.yaml"), []byte("users:\n  - {name: alice, groups: [lab]}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "known_hosts"), nil, 0o600)
	yml := `
gateway: {name: gws3, listen: "127.0.0.1:0", host_keys: [host], user_ca_key: ca, admin_socket: admin.sock}
backend: {known_hosts: [known_hosts]}
directory: {kind: static, static: {file: users.yaml}}
nodes: [{name: login1, addr: "127.0.0.1:1", pool: general}]
policy: {rules: [{name: lab, groups: [lab], pools: [general]}]}
audit:
  file: audit.jsonl
  s3: {bucket: gw-audit, region: us-east-1, endpoint: "` + srv.URL + `", path_style: true, spool_dir: spool, batch_max_age: 1h}
`
	cfg, err := config.Parse(filepath.Join(dir, "gateway.yaml"), []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	a, err := Build(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Listen(); err != nil {
		a.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()

	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	key, _ := ssh.NewSignerFromKey(priv)
	c, err := ssh.Dial("tcp", a.Addr().String(), &ssh.ClientConfig{User: "mallory", Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: ssh.FixedHostKey(hostPub), Timeout: 10 * time.Second})
	if err == nil {
		c.Close()
		t.Fatal("unknown user logged in")
	}
	metrics := adminGet(t, filepath.Join(dir, "admin.sock"), "/metrics")
	for _, m := range []string{`frontdoor_auth_attempts_total{method="publickey",result="fail"} 1`, "frontdoor_audit_s3_", "go_goroutines",
		fmt.Sprintf(`frontdoor_process_sessions{pid="%d",start_time=`, os.Getpid()), `frontdoor_node_draining{node="login1"} 0`, `frontdoor_node_taking_logins{node="login1"} `,
		`frontdoor_reloads_total{result="failed"} 0`, "frontdoor_reload_last_success 1"} {
		if !strings.Contains(metrics, m) {
			t.Errorf("the admin API's /metrics lacks %q", m)
		}
	}
	// The status: this process, this gateway alone (no cluster), the
	// node, and mallory's refusal among the recent ones.
	var st admin.Status
	if err := json.Unmarshal([]byte(adminGet(t, filepath.Join(dir, "admin.sock"), "/v1/status")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Gateway != "gws3" || len(st.Processes) != 1 || st.Processes[0].PID != os.Getpid() || st.Processes[0].State != admin.ProcessServing ||
		len(st.Gateways) != 1 || !st.Gateways[0].Self || len(st.Nodes) != 1 || st.LastReload != nil ||
		st.Refusals.Total < 1 || st.Refusals.ByReason[0].Reason != "auth:publickey:fail" {
		t.Fatalf("status: %+v", st)
	}
	// What the reload code records shows at once.
	a.Reloads.Record(admin.Reload{OK: false, By: "SIGHUP", Error: "gateway.yaml:9: policy.rules: empty"})
	page := adminGet(t, filepath.Join(dir, "admin.sock"), "/status")
	for _, want := range []string{"gateway.yaml:9: policy.rules: empty", "by SIGHUP", "auth:publickey:fail", "login1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the status page lacks %q", want)
		}
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}

	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true, Credentials: aws.AnonymousCredentials{}})
	list, err := client.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("gw-audit")})
	if err != nil {
		t.Fatal(err)
	}
	var events []audit.Event
	for _, o := range list.Contents {
		obj, err := client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("gw-audit"), Key: o.Key})
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(obj.Body)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(zr)
		for sc.Scan() {
			var e audit.Event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				t.Fatal(err)
			}
			if e.Type == audit.TypeBatch { // the chain header of the batch
				continue
			}
			events = append(events, e)
		}
		obj.Body.Close()
	}
	if len(events) == 0 || events[0].Type != audit.TypeAuth || events[0].User != "mallory" || events[0].Gateway != "gws3" {
		t.Fatalf("events in the bucket: %+v", events)
	}
	file, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if n := len(splitLines(file)); n != len(events) {
		t.Errorf("audit file has %d events, the bucket %d", n, len(events))
	}
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	return out
}

// adminGet fetches path from the admin API on its Unix socket.
func adminGet(t *testing.T, sock, path string) string {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
	resp, err := hc.Get("http://localhost" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, b)
	}
	return string(b)
}
