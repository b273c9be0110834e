package discovery

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/frontdoor-hpc/frontdoor/internal/awsclient"
	"github.com/frontdoor-hpc/frontdoor/internal/node"
)

// API is the part of the SageMaker client discovery uses; the SDK's
// *sagemaker.Client satisfies it.
type API interface {
	sagemaker.ListClusterNodesAPIClient
	DescribeClusterNode(ctx context.Context, in *sagemaker.DescribeClusterNodeInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeClusterNodeOutput, error)
}

// Options are the parts of a Source built outside it.
type Options struct {
	Logger *slog.Logger
	// API replaces the SageMaker client built from the config (default
	// credential chain, cfg.Region, cfg.Endpoint).
	API API
}

// Source is HyperPod discovery: the current node list, refreshed by Run.
type Source struct {
	cfg     Config
	api     API
	log     *slog.Logger
	metrics *metrics
	changed chan struct{}
	// transport is the SageMaker client's (nil with Options.API).
	transport *http.Transport

	refreshMu sync.Mutex // one refresh at a time; it also guards details
	details   map[string]details

	mu      sync.Mutex // mu protects the following
	nodes   []Node
	lastOK  time.Time
	lastErr error
}

// details are what DescribeClusterNode says of an instance; they do not
// change during its life, so they are fetched once.
type details struct {
	ip, hostname, instanceType string
}

// New builds a Source; it makes no API call (credentials are resolved on
// the first one).
func New(ctx context.Context, cfg Config, opts Options) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Source{cfg: cfg, api: opts.API, log: opts.Logger, metrics: newMetrics(),
		changed: make(chan struct{}, 1), details: map[string]details{}}
	if s.api == nil {
		c, tr, err := NewClient(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.api, s.transport = c, tr
	}
	return s, nil
}

// NewClient builds the SageMaker client for cfg (see internal/awsclient:
// the default credential chain, cfg.Region, the SDK's standard retryer
// with cfg.MaxAttempts), cfg.Endpoint as its base endpoint, and returns
// the transport under it.
func NewClient(ctx context.Context, cfg Config) (*sagemaker.Client, *http.Transport, error) {
	ac, tr, err := awsclient.Load(ctx, cfg.Region, cfg.MaxAttempts)
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	return sagemaker.NewFromConfig(ac, func(o *sagemaker.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}), tr, nil
}

// Close releases the client's idle connections; call it after Run returned.
func (s *Source) Close() {
	if s.transport != nil {
		s.transport.CloseIdleConnections()
	}
}

// Nodes returns the last good node list, sorted by name. Before the first
// successful refresh it is empty and Status reports a zero time: "not
// known yet", which a caller should not take for "no nodes".
func (s *Source) Nodes() []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.nodes)
}

// Status returns when the last refresh succeeded and the error of the
// last refresh (nil if it succeeded).
func (s *Source) Status() (lastSuccess time.Time, lastErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastOK, s.lastErr
}

// Changed receives a value after the first successful refresh and after
// every refresh that changed the node list (coalesced: one pending value
// at most).
func (s *Source) Changed() <-chan struct{} { return s.changed }

// Collectors are the discovery metrics, for the caller's registry.
func (s *Source) Collectors() []prometheus.Collector { return s.metrics.collectors() }

// Run refreshes at once and then every RefreshInterval (± Jitter) until
// ctx ends. A failed refresh is logged and the last good list kept.
func (s *Source) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.Refresh(ctx); err != nil && ctx.Err() == nil {
			last, _ := s.Status()
			s.log.Error("discovery refresh failed; keeping the last good node list", "err", err,
				"cluster", s.cfg.Cluster, "nodes", len(s.Nodes()), "last_success", last)
		}
		t.Reset(jittered(s.cfg.RefreshInterval, s.cfg.Jitter, rand.Float64()))
	}
}

// jittered spreads d by ± j (r in [0, 1)).
func jittered(d time.Duration, j, r float64) time.Duration {
	return time.Duration(float64(d) * (1 + j*(2*r-1)))
}

// Refresh lists the cluster's nodes now. On error the previous list stays.
func (s *Source) Refresh(ctx context.Context) error {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	nodes, err := s.refresh(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastErr = err
	if err != nil {
		s.metrics.errors.WithLabelValues("list").Inc()
		return err
	}
	first := s.lastOK.IsZero()
	s.lastOK = time.Now()
	s.metrics.lastSuccess.Set(float64(s.lastOK.UnixNano()) / 1e9)
	s.metrics.setNodes(nodes)
	// The first success signals even with no nodes: "known" at last.
	if first || !slices.Equal(nodes, s.nodes) {
		s.logChanges(s.nodes, nodes)
		s.nodes = nodes
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
	return nil
}

// refresh does steps 1–3 of the package comment; refreshMu is held.
func (s *Source) refresh(ctx context.Context) ([]Node, error) {
	pools := map[string]string{}
	for _, g := range s.cfg.InstanceGroups {
		pools[g.Name] = g.Pool
	}
	in := &sagemaker.ListClusterNodesInput{ClusterName: aws.String(s.cfg.Cluster), MaxResults: aws.Int32(100)}
	if len(s.cfg.InstanceGroups) == 1 {
		in.InstanceGroupNameContains = aws.String(s.cfg.InstanceGroups[0].Name)
	}
	var nodes []Node
	seen := map[string]bool{}
	pages := sagemaker.NewListClusterNodesPaginator(s.api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ListClusterNodes %s: %w", s.cfg.Cluster, err)
		}
		for _, sum := range page.ClusterNodeSummaries {
			pool, ok := pools[aws.ToString(sum.InstanceGroupName)]
			id := aws.ToString(sum.InstanceId)
			if !ok || id == "" || seen[id] {
				continue // another group (substring filter), not launched yet, or listed twice
			}
			seen[id] = true
			status, msg := "", ""
			if sum.InstanceStatus != nil {
				status, msg = string(sum.InstanceStatus.Status), aws.ToString(sum.InstanceStatus.Message)
			}
			n := Node{Node: node.Node{Pool: pool}, InstanceID: id, Status: status, InstanceType: string(sum.InstanceType)}
			n.Eligible, n.Reason = eligibility(status, msg)
			d, err := s.describe(ctx, id)
			if err != nil {
				if ctx.Err() != nil {
					return nil, fmt.Errorf("DescribeClusterNode %s: %w", id, err)
				}
				// This node waits for the next refresh; the others are fine.
				s.metrics.errors.WithLabelValues("describe").Inc()
				s.log.Warn("discovery: describe failed; node not usable until it succeeds", "instance", id, "err", err)
				d = details{hostname: aws.ToString(sum.PrivateDnsHostname)}
				if n.Eligible {
					n.Eligible, n.Reason = false, "address not known yet: DescribeClusterNode failed"
				}
			}
			if d.instanceType != "" {
				n.InstanceType = d.instanceType
			}
			n.Name = NodeName(d.hostname, id)
			n.Addr = sshAddr(d.ip, s.cfg.SSHPort)
			if n.Eligible && n.Addr == "" {
				n.Eligible, n.Reason = false, "no private IP address reported"
			}
			nodes = append(nodes, n)
		}
	}
	for id := range s.details {
		if !seen[id] {
			delete(s.details, id) // gone from the cluster
		}
	}
	return uniqueNames(nodes), nil
}

// describe returns the instance's details, from the cache or the API.
func (s *Source) describe(ctx context.Context, id string) (details, error) {
	if d, ok := s.details[id]; ok {
		return d, nil
	}
	out, err := s.api.DescribeClusterNode(ctx, &sagemaker.DescribeClusterNodeInput{
		ClusterName: aws.String(s.cfg.Cluster), NodeId: aws.String(id)})
	if err != nil {
		return details{}, err
	}
	if out.NodeDetails == nil {
		return details{}, errors.New("response has no NodeDetails")
	}
	nd := out.NodeDetails
	d := details{ip: aws.ToString(nd.PrivatePrimaryIp), hostname: aws.ToString(nd.PrivateDnsHostname),
		instanceType: string(nd.InstanceType)}
	if d.ip == "" {
		// Not cached: an instance still being set up may get its address later.
		return d, nil
	}
	s.details[id] = d
	return d, nil
}

// uniqueNames sorts nodes by name and gives a node whose name another
// already has its instance ID instead, so names stay unique.
func uniqueNames(nodes []Node) []Node {
	slices.SortFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.InstanceID, b.InstanceID))
	})
	taken := map[string]bool{}
	for i := range nodes {
		if nodes[i].Name == "" || taken[nodes[i].Name] {
			nodes[i].Name = nodes[i].InstanceID
		}
		taken[nodes[i].Name] = true
	}
	slices.SortFunc(nodes, func(a, b Node) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.InstanceID, b.InstanceID))
	})
	return nodes
}

func (s *Source) logChanges(old, cur []Node) {
	prev := map[string]Node{}
	for _, n := range old {
		prev[n.InstanceID] = n
	}
	for _, n := range cur {
		p, ok := prev[n.InstanceID]
		switch {
		case !ok:
			s.log.Info("discovery: node appeared", "node", n.Name, "instance", n.InstanceID, "addr", n.Addr, "status", n.Status, "eligible", n.Eligible)
		case p != n:
			s.log.Info("discovery: node changed", "node", n.Name, "instance", n.InstanceID, "from", p.Status, "status", n.Status, "eligible", n.Eligible, "reason", n.Reason)
		}
		delete(prev, n.InstanceID)
	}
	for _, n := range prev {
		s.log.Info("discovery: node gone", "node", n.Name, "instance", n.InstanceID)
	}
}
