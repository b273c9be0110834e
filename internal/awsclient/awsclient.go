// Package awsclient loads the AWS SDK configuration the same way for every
// frontdoor part that calls AWS (discovery, the S3 audit sink): the SDK's
// default credential chain (environment, shared profile or SSO, the
// instance role), an explicit region, the SDK's standard retryer, and an
// HTTP transport the caller owns, so that closing the part closes its
// connections too.
package awsclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
)

// Load returns the SDK configuration for region (empty: the SDK's own
// chain, AWS_REGION or the profile) with at most maxAttempts attempts per
// call (0: the SDK's default), and the transport under it.
func Load(ctx context.Context, region string, maxAttempts int) (aws.Config, *http.Transport, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	if maxAttempts > 0 {
		opts = append(opts, awsconfig.WithRetryMaxAttempts(maxAttempts))
	}
	ac, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, nil, fmt.Errorf("aws config: %w", err)
	}
	if ac.Region == "" {
		return aws.Config{}, nil, errors.New("no AWS region configured (nor AWS_REGION)")
	}
	// The SDK's client as configured (AWS_CA_BUNDLE, timeouts), frozen
	// over a transport we keep; like the SDK's, it follows no redirects.
	var tr *http.Transport
	if bc, ok := ac.HTTPClient.(*awshttp.BuildableClient); ok {
		tr = bc.GetTransport()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	ac.HTTPClient = &http.Client{Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return ac, tr, nil
}
