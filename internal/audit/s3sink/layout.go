package s3sink

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/frontdoor-hpc/frontdoor/internal/names"
)

// Object keys in the bucket, written down before the code:
//
//	PREFIX/GATEWAY/yyyy/mm/dd/CHAIN-SEQ.jsonl.gz   a chained batch (written now)
//	PREFIX/yyyy/mm/dd/GATEWAY-SEQ.jsonl.gz         a batch from before chaining (read, never written)
//
// GATEWAY is a path segment of its own so that an IAM policy can give each
// gateway exactly PREFIX/GATEWAY/* and nothing of its peers (deploy/). The
// day is the UTC day of the batch's first event, so a reader of a time
// window lists a few day prefixes per gateway, not the bucket. CHAIN is
// the UTC second the chain began and 32 random bits
// (20261203T060102Z-1a2b3c4d): a gateway that lost its chain state and
// starts again can never collide with its own earlier keys. SEQ is the
// batch's place in its chain, from 1. The two layouts cannot be confused:
// a chained key has one more segment.

const (
	objectExt = ".jsonl.gz"
	seqDigits = 10
	dayLayout = "2006/01/02"
)

var chainRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$`)

// Key is a batch object's key, parsed.
type Key struct {
	Gateway string
	Day     time.Time // UTC midnight
	// Chain is empty for a key from before chaining (Legacy).
	Chain  string
	Seq    uint64
	Legacy bool
}

// String is the key under prefix.
func (k Key) String(prefix string) string {
	if k.Legacy {
		return fmt.Sprintf("%s/%s/%s-%0*d%s", prefix, k.Day.Format(dayLayout), k.Gateway, seqDigits, k.Seq, objectExt)
	}
	return fmt.Sprintf("%s/%s/%s/%s-%0*d%s", prefix, k.Gateway, k.Day.Format(dayLayout), k.Chain, seqDigits, k.Seq, objectExt)
}

// ParseKey parses an object key under prefix in either layout.
func ParseKey(prefix, key string) (Key, error) {
	rest, ok := strings.CutPrefix(key, prefix+"/")
	if !ok {
		return Key{}, fmt.Errorf("%q is not under %s/", key, prefix)
	}
	parts := strings.Split(rest, "/")
	var k Key
	switch len(parts) {
	case 4:
		k.Legacy = true
	case 5:
		k.Gateway, parts = parts[0], parts[1:]
		if !names.Gateway.Valid(k.Gateway) {
			return Key{}, fmt.Errorf("%q: %q is not a gateway name", key, k.Gateway)
		}
	default:
		return Key{}, fmt.Errorf("%q is not PREFIX/GATEWAY/yyyy/mm/dd/CHAIN-SEQ%s", key, objectExt)
	}
	day, err := time.Parse(dayLayout, strings.Join(parts[:3], "/"))
	if err != nil || day.Format(dayLayout) != strings.Join(parts[:3], "/") {
		return Key{}, fmt.Errorf("%q: no yyyy/mm/dd", key)
	}
	k.Day = day
	base, ok := strings.CutSuffix(parts[3], objectExt)
	i := strings.LastIndexByte(base, '-')
	if !ok || i < 0 {
		return Key{}, fmt.Errorf("%q: the name is not NAME-SEQ%s", key, objectExt)
	}
	name, num := base[:i], base[i+1:]
	if len(num) < seqDigits || len(num) > 20 || strings.TrimLeft(num, "0123456789") != "" {
		return Key{}, fmt.Errorf("%q: %q is not a sequence number", key, num)
	}
	if k.Seq, err = strconv.ParseUint(num, 10, 64); err != nil || fmt.Sprintf("%0*d", seqDigits, k.Seq) != num {
		return Key{}, fmt.Errorf("%q: %q is not a sequence number", key, num)
	}
	if k.Legacy {
		if !names.Gateway.Valid(name) {
			return Key{}, fmt.Errorf("%q: %q is not a gateway name", key, name)
		}
		k.Gateway = name
		return k, nil
	}
	if !chainRE.MatchString(name) {
		return Key{}, fmt.Errorf("%q: %q is not a chain name", key, name)
	}
	k.Chain = name
	return k, nil
}

// Lister is the part of the S3 client that lists a bucket; *s3.Client
// satisfies it.
type Lister interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Gateways lists the gateway prefixes under prefix (PREFIX/GATEWAY/), one
// LIST per 1000 with a delimiter; each call is bounded by timeout. Years
// of the old layout (PREFIX/2026/) come back too: a reader that lists
// PREFIX/2026/yyyy/mm/dd/ finds nothing there, which costs one call.
func Gateways(ctx context.Context, api Lister, bucket, prefix string, timeout time.Duration) ([]string, error) {
	var out []string
	var token *string
	for {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		page, err := api.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix + "/"),
			Delimiter: aws.String("/"), ContinuationToken: token})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s/: %w", bucket, prefix, err)
		}
		for _, p := range page.CommonPrefixes {
			if p.Prefix == nil {
				continue
			}
			name := strings.TrimSuffix(strings.TrimPrefix(*p.Prefix, prefix+"/"), "/")
			if names.Gateway.Valid(name) {
				out = append(out, name)
			}
		}
		if page.IsTruncated == nil || !*page.IsTruncated || page.NextContinuationToken == nil {
			return out, nil
		}
		token = page.NextContinuationToken
	}
}

// DayPrefixes are the key prefixes that hold the batches whose first
// event is on day: the old layout's, then each gateway's.
func DayPrefixes(prefix string, gateways []string, day time.Time) []string {
	d := day.UTC().Format(dayLayout)
	out := []string{prefix + "/" + d + "/"}
	for _, g := range gateways {
		out = append(out, prefix+"/"+g+"/"+d+"/")
	}
	return out
}
