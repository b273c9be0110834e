// Package discoverytest is an in-process SageMaker API endpoint for tests:
// it speaks the real wire protocol (awsJson1.1: POST /, X-Amz-Target
// SageMaker.ListClusterNodes / SageMaker.DescribeClusterNode,
// application/x-amz-json-1.1, errors as HTTP 400 with "__type"), checks
// every request's SigV4 signature against the test credentials, and serves
// a HyperPod cluster whose nodes a test moves between states. Discovery
// tests and end-to-end suites point the SDK at it through
// discovery.endpoint.
package discoverytest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Test credentials: set them in the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) so the SDK's default chain finds them.
const (
	AccessKeyID     = "AKIDFRONTDOORTEST"
	SecretAccessKey = "frontdoor-test-secret-key/0123456789abcdef"
)

// Node is one instance of the fake cluster.
type Node struct {
	Group, InstanceID, Status, Message string
	IP, Hostname, InstanceType         string
	LaunchTime                         time.Time
}

// Server is the fake SageMaker endpoint. Its methods are safe for
// concurrent use.
type Server struct {
	URL     string
	Region  string
	Cluster string // the name; the ARN is accepted too
	ARN     string

	srv *httptest.Server

	mu sync.Mutex // mu protects the following
	// PageSize caps ListClusterNodes pages (default 100, the API's max).
	pageSize  int
	nodes     []Node
	throttle  map[string]int // operation → throttling answers still to give
	failing   bool           // every call answers 500
	calls     map[string]int // operation → requests (retries included)
	describes map[string]int // instance ID → DescribeClusterNode requests answered
	problems  []string       // protocol violations seen
	filters   []string       // InstanceGroupNameContains values received
}

// Start serves a fake cluster named cluster in region on 127.0.0.1; it
// stops when the test ends.
func Start(tb testing.TB, region, cluster string) *Server {
	s := &Server{Region: region, Cluster: cluster, pageSize: 100,
		ARN:      "arn:aws:sagemaker:" + region + ":123456789012:cluster/abcdef012345",
		throttle: map[string]int{}, calls: map[string]int{}, describes: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	tb.Cleanup(func() {
		s.srv.Close()
		if p := s.Problems(); len(p) > 0 {
			tb.Errorf("fake SageMaker saw protocol problems:\n%s", strings.Join(p, "\n"))
		}
	})
	return s
}

// SetPageSize sets the largest page ListClusterNodes returns.
func (s *Server) SetPageSize(n int) { s.mu.Lock(); s.pageSize = n; s.mu.Unlock() }

// SetNodes replaces the cluster's instances.
func (s *Server) SetNodes(nodes ...Node) { s.mu.Lock(); s.nodes = slices.Clone(nodes); s.mu.Unlock() }

// SetStatus changes one instance's status (and message).
func (s *Server) SetStatus(id, status, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.nodes {
		if s.nodes[i].InstanceID == id {
			s.nodes[i].Status, s.nodes[i].Message = status, message
		}
	}
}

// Remove takes an instance out of the cluster.
func (s *Server) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = slices.DeleteFunc(s.nodes, func(n Node) bool { return n.InstanceID == id })
}

// Throttle makes the next n calls of op ("ListClusterNodes",
// "DescribeClusterNode") answer ThrottlingException.
func (s *Server) Throttle(op string, n int) { s.mu.Lock(); s.throttle[op] = n; s.mu.Unlock() }

// Fail makes every call answer HTTP 500 (an outage) until Fail(false).
func (s *Server) Fail(on bool) { s.mu.Lock(); s.failing = on; s.mu.Unlock() }

// Calls returns how many requests op received, retries included.
func (s *Server) Calls(op string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[op] }

// Describes returns how many DescribeClusterNode requests for id were answered.
func (s *Server) Describes(id string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.describes[id] }

// Filters returns the InstanceGroupNameContains values received.
func (s *Server) Filters() []string { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.filters) }

// Problems returns the protocol violations seen (bad signature, headers…).
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.problems)
}

func (s *Server) problem(format string, args ...any) {
	s.mu.Lock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		s.problem("read body: %v", err)
		return
	}
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "SageMaker.")
	switch {
	case r.Method != http.MethodPost || r.URL.Path != "/":
		s.problem("%s %s: want POST /", r.Method, r.URL.Path)
		WriteError(w, 404, "UnknownOperationException", "not found")
		return
	case !ok:
		s.problem("X-Amz-Target %q: want SageMaker.<Operation>", target)
		WriteError(w, 400, "UnknownOperationException", "no target")
		return
	case r.Header.Get("Content-Type") != "application/x-amz-json-1.1":
		s.problem("%s: Content-Type %q, want application/x-amz-json-1.1", op, r.Header.Get("Content-Type"))
		WriteError(w, 400, "SerializationException", "bad content type")
		return
	}
	if err := s.verifySigV4(r, body); err != nil {
		s.problem("%s: SigV4: %v", op, err)
		WriteError(w, 403, "InvalidSignatureException", err.Error())
		return
	}
	s.mu.Lock()
	s.calls[op]++
	failing, throttled := s.failing, s.throttle[op] > 0
	if throttled {
		s.throttle[op]--
	}
	s.mu.Unlock()
	switch {
	case failing:
		WriteError(w, 500, "InternalFailure", "fake outage")
		return
	case throttled:
		WriteError(w, 400, "ThrottlingException", "Rate exceeded")
		return
	}
	switch op {
	case "ListClusterNodes":
		s.listClusterNodes(w, body)
	case "DescribeClusterNode":
		s.describeClusterNode(w, body)
	default:
		s.problem("unexpected operation %s", op)
		WriteError(w, 400, "UnknownOperationException", op)
	}
}

func (s *Server) clusterOK(name string) bool { return name == s.Cluster || name == s.ARN }

func (s *Server) listClusterNodes(w http.ResponseWriter, body []byte) {
	var in struct {
		ClusterName               string
		InstanceGroupNameContains *string
		MaxResults                *int
		NextToken                 *string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.problem("ListClusterNodes body: %v", err)
		WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if !s.clusterOK(in.ClusterName) {
		WriteError(w, 400, "ResourceNotFound", "Cluster "+in.ClusterName+" not found")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var match []Node
	for _, n := range s.nodes {
		if in.InstanceGroupNameContains == nil || strings.Contains(n.Group, *in.InstanceGroupNameContains) {
			match = append(match, n)
		}
	}
	if in.InstanceGroupNameContains != nil {
		s.filters = append(s.filters, *in.InstanceGroupNameContains)
	}
	size := s.pageSize
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			s.problem("MaxResults %d out of 1..100", *in.MaxResults)
		}
		size = min(size, *in.MaxResults)
	}
	start := 0
	if in.NextToken != nil {
		v, err := strconv.Atoi(strings.TrimPrefix(*in.NextToken, "page-"))
		if err != nil || v < 0 {
			WriteError(w, 400, "ValidationException", "invalid NextToken")
			return
		}
		start = min(v, len(match))
	}
	end := min(start+size, len(match))
	sums := []map[string]any{}
	for _, n := range match[start:end] {
		sums = append(sums, map[string]any{
			"InstanceGroupName": n.Group, "InstanceId": n.InstanceID, "InstanceType": n.InstanceType,
			"LaunchTime":     float64(launch(n).UnixMilli()) / 1000,
			"InstanceStatus": status(n),
		})
	}
	out := map[string]any{"ClusterNodeSummaries": sums}
	if end < len(match) {
		out["NextToken"] = "page-" + strconv.Itoa(end)
	}
	WriteJSON(w, out)
}

func (s *Server) describeClusterNode(w http.ResponseWriter, body []byte) {
	var in struct{ ClusterName, NodeId string }
	if err := json.Unmarshal(body, &in); err != nil {
		s.problem("DescribeClusterNode body: %v", err)
		WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if !s.clusterOK(in.ClusterName) {
		WriteError(w, 400, "ResourceNotFound", "Cluster "+in.ClusterName+" not found")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.nodes {
		if n.InstanceID != in.NodeId {
			continue
		}
		s.describes[n.InstanceID]++
		d := map[string]any{
			"InstanceGroupName": n.Group, "InstanceId": n.InstanceID, "InstanceType": n.InstanceType,
			"InstanceStatus": status(n), "LaunchTime": float64(launch(n).UnixMilli()) / 1000,
			"LifeCycleConfig": map[string]any{"SourceS3Uri": "s3://lifecycle/scripts/", "OnCreate": "on_create.sh"},
			"ThreadsPerCore":  1,
			"Placement":       map[string]any{"AvailabilityZone": s.Region + "a", "AvailabilityZoneId": "usw2-az1"},
		}
		if n.IP != "" {
			d["PrivatePrimaryIp"] = n.IP
		}
		if n.Hostname != "" {
			d["PrivateDnsHostname"] = n.Hostname
		}
		WriteJSON(w, map[string]any{"NodeDetails": d})
		return
	}
	WriteError(w, 400, "ResourceNotFound", "Node "+in.NodeId+" not found")
}

func launch(n Node) time.Time {
	if n.LaunchTime.IsZero() {
		return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	}
	return n.LaunchTime
}

func status(n Node) map[string]any {
	st := map[string]any{"Status": n.Status}
	if n.Message != "" {
		st["Message"] = n.Message
	}
	return st
}

// WriteJSON answers like AWS JSON services (awsJson1.1).
func WriteJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
	w.Write(b)
}

// WriteError answers like AWS JSON services: the error code in "__type".
func WriteError(w http.ResponseWriter, code int, typ, msg string) {
	b, _ := json.Marshal(map[string]string{"__type": typ, "message": msg})
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("x-amzn-RequestId", "00000000-0000-0000-0000-000000000000")
	w.WriteHeader(code)
	w.Write(b)
}

// verifySigV4 checks a request's signature with the test credentials
// for the cluster's region and service "sagemaker".
func (s *Server) verifySigV4(r *http.Request, body []byte) error {
	return VerifySigV4(r, body, AccessKeyID, SecretAccessKey, s.Region, "sagemaker")
}

// VerifySigV4 parses the Authorization header, checks the credential scope
// (key, region, service) and recomputes the signature over the headers
// the client signed; every fake AWS endpoint of the tests uses it.
func VerifySigV4(r *http.Request, body []byte, keyID, secret, region, service string) error {
	auth := r.Header.Get("Authorization")
	algo, rest, _ := strings.Cut(auth, " ")
	if algo != "AWS4-HMAC-SHA256" {
		return fmt.Errorf("Authorization %q: not AWS4-HMAC-SHA256", auth)
	}
	fields := map[string]string{}
	for _, f := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return fmt.Errorf("credential %q: want KEY/DATE/REGION/SERVICE/aws4_request", fields["Credential"])
	}
	if scope[0] != keyID || scope[2] != region || scope[3] != service {
		return fmt.Errorf("credential scope key=%s region=%s service=%s, want %s/%s/%s", scope[0], scope[2], scope[3], keyID, region, service)
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fmt.Errorf("X-Amz-Date: %w", err)
	}
	if scope[1] != when.Format("20060102") {
		return fmt.Errorf("credential date %s but X-Amz-Date %s", scope[1], when)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	if h := r.Header.Get("X-Amz-Content-Sha256"); h != "" && h != hash {
		return fmt.Errorf("X-Amz-Content-Sha256 does not match the body")
	}
	re, _ := http.NewRequestWithContext(context.Background(), r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	re.Header = http.Header{}
	re.ContentLength = 0
	signed := strings.Split(fields["SignedHeaders"], ";")
	if !slices.Contains(signed, "host") || !slices.Contains(signed, "x-amz-target") {
		return fmt.Errorf("SignedHeaders %q lack host or x-amz-target", fields["SignedHeaders"])
	}
	for _, h := range signed {
		switch h {
		case "host":
		case "content-length":
			re.ContentLength = int64(len(body))
		default:
			re.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	re.Header.Del("Authorization")
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: secret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, re, hash, service, region, when); err != nil {
		return err
	}
	if got := re.Header.Get("Authorization"); got != auth {
		return fmt.Errorf("signature mismatch:\n got  %s\n want %s", auth, got)
	}
	return nil
}
