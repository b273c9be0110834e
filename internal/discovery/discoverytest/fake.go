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
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient/awsjsontest"
)

// Test credentials: set them in the environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY) so the SDK's default chain finds them.
const (
	AccessKeyID     = awsjsontest.AccessKeyID
	SecretAccessKey = awsjsontest.SecretAccessKey
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
	// Record counts requests by operation (Calls) and keeps the protocol
	// violations seen (Problems).
	awsjsontest.Record

	mu sync.Mutex // mu protects the following
	// PageSize caps ListClusterNodes pages (default 100, the API's max).
	pageSize  int
	nodes     []Node
	throttle  map[string]int // operation → throttling answers still to give
	failing   bool           // every call answers 500
	describes map[string]int // instance ID → DescribeClusterNode requests answered
	filters   []string       // InstanceGroupNameContains values received
}

// Start serves a fake cluster named cluster in region on 127.0.0.1; it
// stops when the test ends.
func Start(tb testing.TB, region, cluster string) *Server {
	s := &Server{Region: region, Cluster: cluster, pageSize: 100,
		ARN:      "arn:aws:sagemaker:" + region + ":123456789012:cluster/abcdef012345",
		throttle: map[string]int{}, describes: map[string]int{}}
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

// Describes returns how many DescribeClusterNode requests for id were answered.
func (s *Server) Describes(id string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.describes[id] }

// Filters returns the InstanceGroupNameContains values received.
func (s *Server) Filters() []string { s.mu.Lock(); defer s.mu.Unlock(); return slices.Clone(s.filters) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	op, body, ok := s.service().Read(w, r, &s.Record)
	if !ok {
		return
	}
	s.mu.Lock()
	failing, throttled := s.failing, s.throttle[op] > 0
	if throttled {
		s.throttle[op]--
	}
	s.mu.Unlock()
	switch {
	case failing:
		awsjsontest.WriteError(w, 500, "InternalFailure", "fake outage")
		return
	case throttled:
		awsjsontest.WriteError(w, 400, "ThrottlingException", "Rate exceeded")
		return
	}
	switch op {
	case "ListClusterNodes":
		s.listClusterNodes(w, body)
	case "DescribeClusterNode":
		s.describeClusterNode(w, body)
	default:
		s.Problem("unexpected operation %s", op)
		awsjsontest.WriteError(w, 400, "UnknownOperationException", op)
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
		s.Problem("ListClusterNodes body: %v", err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if !s.clusterOK(in.ClusterName) {
		awsjsontest.WriteError(w, 400, "ResourceNotFound", "Cluster "+in.ClusterName+" not found")
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
			s.Problem("MaxResults %d out of 1..100", *in.MaxResults)
		}
		size = min(size, *in.MaxResults)
	}
	start := 0
	if in.NextToken != nil {
		v, err := strconv.Atoi(strings.TrimPrefix(*in.NextToken, "page-"))
		if err != nil || v < 0 {
			awsjsontest.WriteError(w, 400, "ValidationException", "invalid NextToken")
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
	awsjsontest.WriteJSON(w, out)
}

func (s *Server) describeClusterNode(w http.ResponseWriter, body []byte) {
	var in struct{ ClusterName, NodeId string }
	if err := json.Unmarshal(body, &in); err != nil {
		s.Problem("DescribeClusterNode body: %v", err)
		awsjsontest.WriteError(w, 400, "SerializationException", err.Error())
		return
	}
	if !s.clusterOK(in.ClusterName) {
		awsjsontest.WriteError(w, 400, "ResourceNotFound", "Cluster "+in.ClusterName+" not found")
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
		awsjsontest.WriteJSON(w, map[string]any{"NodeDetails": d})
		return
	}
	awsjsontest.WriteError(w, 400, "ResourceNotFound", "Node "+in.NodeId+" not found")
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

// service is the fake's protocol identity.
func (s *Server) service() awsjsontest.Service {
	return awsjsontest.Service{TargetPrefix: "SageMaker", SigningName: "sagemaker", Region: s.Region}
}

// verifySigV4 checks a request's SigV4 signature (awsjsontest).
func (s *Server) verifySigV4(r *http.Request, body []byte) error {
	return s.service().VerifySigV4(r, body)
}
