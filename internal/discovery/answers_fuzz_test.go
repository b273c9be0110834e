package discovery_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/frontdoor-hpc/frontdoor/internal/discovery"
	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// cannedAPI answers every SageMaker call of the real SDK client with a
// fixed body, in memory: list for ListClusterNodes (every page),
// describe for DescribeClusterNode (every node). It counts the calls.
type cannedAPI struct {
	list, describe []byte
	calls          int
}

func (c *cannedAPI) Do(r *http.Request) (*http.Response, error) {
	c.calls++
	body := c.describe
	if r.Header.Get("X-Amz-Target") == "SageMaker.ListClusterNodes" {
		body = c.list
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/x-amz-json-1.1"}, "X-Amzn-Requestid": {"fuzz"}},
		Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
}

// FuzzHyperPodAnswers feeds a ListClusterNodes and a DescribeClusterNode
// answer, as SageMaker could send them, through the real SDK client's
// deserializer into one discovery refresh. Whatever they hold, the refresh
// ends (a NextToken that never changes or never ends does not loop) and
// either fails or yields nodes a gateway can use safely: each named by a
// valid, unique node name, in a configured pool, with an address that is
// empty or an IP at the configured port, eligible only when Running with
// an address, and a reason that is one printable line of bounded length
// (it reaches `frontdoor discover` tables and the status page).
// Seeds: testdata/fuzz/FuzzHyperPodAnswers, the shapes of the API
// reference's response syntax (every member of ClusterNodeSummary and
// ClusterNodeDetails) and what the test fake sends.
func FuzzHyperPodAnswers(f *testing.F) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.Fuzz(func(t *testing.T, list, describe []byte) {
		api := &cannedAPI{list: list, describe: describe}
		client := sagemaker.New(sagemaker.Options{
			Region:       region,
			BaseEndpoint: aws.String("https://sagemaker.invalid"),
			HTTPClient:   api,
			Retryer:      aws.NopRetryer{},
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: "AKIDFUZZ", SecretAccessKey: "fuzz"}, nil
			}),
		})
		cfg := testConfig("ml-cluster", "", discovery.InstanceGroup{Name: "login", Pool: "general"},
			discovery.InstanceGroup{Name: "login-gpu", Pool: "gpu"})
		cfg.Region, cfg.SSHPort, cfg.Timeout = region, 2222, 10*time.Second
		src, err := discovery.New(context.Background(), cfg, discovery.Options{Logger: log, API: client})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		err = src.Refresh(context.Background())
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("a refresh over canned answers took %v (%d calls)", took, api.calls)
		}
		if err != nil {
			if len(src.Nodes()) != 0 {
				t.Fatalf("failed refresh (%v) left nodes", err)
			}
			return
		}
		seenName, seenID := map[string]bool{}, map[string]bool{}
		for _, n := range src.Nodes() {
			if !names.Node.Valid(n.Name) || seenName[n.Name] {
				t.Fatalf("node name %q: invalid or taken twice (%+v)", n.Name, n)
			}
			seenName[n.Name] = true
			if n.InstanceID == "" || seenID[n.InstanceID] {
				t.Fatalf("instance ID %q: empty or listed twice", n.InstanceID)
			}
			seenID[n.InstanceID] = true
			if n.Pool != "general" && n.Pool != "gpu" {
				t.Fatalf("node %q in pool %q, which no instance group names", n.Name, n.Pool)
			}
			if n.Addr != "" {
				host, port, err := net.SplitHostPort(n.Addr)
				if err != nil || net.ParseIP(host) == nil || port != strconv.Itoa(cfg.SSHPort) {
					t.Fatalf("node %q: address %q is not IP:%d", n.Name, n.Addr, cfg.SSHPort)
				}
			}
			if n.Eligible && (n.Status != "Running" || n.Addr == "" || n.Reason != "") {
				t.Fatalf("node eligible without being Running at an address: %+v", n)
			}
			if !n.Eligible && n.Reason == "" {
				t.Fatalf("node not eligible, no reason: %+v", n)
			}
			for what, s := range map[string]string{"reason": n.Reason, "status": n.Status, "instance type": n.InstanceType} {
				if len(s) > 512 || strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) {
					t.Fatalf("node %q: %s %q is not one printable line", n.Name, what, s)
				}
			}
		}
	})
}
