package verify

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3API is the part of the S3 client verify uses; *s3.Client satisfies
// it. A reader's IAM policy needs s3:ListBucket and s3:GetObject only
// (deploy/iam-audit-reader-policy.json).
type S3API interface {
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

// S3 is a bucket as a Source; every call is bounded by CallTimeout
// (default 1m).
type S3 struct {
	API         S3API
	Bucket      string
	CallTimeout time.Duration
}

func (b S3) timeout() time.Duration {
	if b.CallTimeout <= 0 {
		return time.Minute
	}
	return b.CallTimeout
}

// List lists every object under prefix, 1000 a call.
func (b S3) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	var token *string
	for {
		cctx, cancel := context.WithTimeout(ctx, b.timeout())
		page, err := b.API.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: aws.String(b.Bucket), Prefix: aws.String(prefix), ContinuationToken: token})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", b.Bucket, prefix, err)
		}
		for _, o := range page.Contents {
			if o.Key == nil {
				continue
			}
			obj := Object{Key: *o.Key, Size: aws.ToInt64(o.Size)}
			if o.LastModified != nil {
				obj.Modified = *o.LastModified
			}
			out = append(out, obj)
		}
		if page.IsTruncated == nil || !*page.IsTruncated || page.NextContinuationToken == nil {
			return out, nil
		}
		token = page.NextContinuationToken
	}
}

// Get reads one object, at most limit bytes.
func (b S3) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, b.timeout())
	defer cancel()
	obj, err := b.API.GetObject(cctx, &s3.GetObjectInput{Bucket: aws.String(b.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", b.Bucket, key, err)
	}
	defer obj.Body.Close()
	body, err := io.ReadAll(io.LimitReader(obj.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", b.Bucket, key, err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, limit)
	}
	return body, nil
}
