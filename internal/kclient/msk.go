package kclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
)

// awsRefreshBefore is how long before their expiry the cached AWS
// credentials are fetched again. A signature is checked when a
// connection authenticates, and franz-go authenticates again before the
// broker's session lifetime ends: credentials that still hold for a few
// minutes cover the authentications under way.
const awsRefreshBefore = 5 * time.Minute

// ErrNoAWSCredentials: AWS_MSK_IAM found no AWS credentials anywhere in
// the AWS SDK's default chain.
var ErrNoAWSCredentials = errors.New("AWS_MSK_IAM found no AWS credentials: " +
	"none in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY), " +
	"no web identity token (AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, as EKS IRSA sets), " +
	"no profile in the shared files (AWS_PROFILE, ~/.aws/credentials, ~/.aws/config), " +
	"no container credentials endpoint (AWS_CONTAINER_CREDENTIALS_FULL_URI or _RELATIVE_URI, as EKS Pod Identity and ECS set), " +
	"and the instance profile (EC2 instance metadata) gave none")

// AWSCredentialsError is a source of the AWS chain that was found but
// gave no credentials: a web identity token STS refused, a container
// credentials endpoint that failed, a profile that names what is not
// there. The brokers were not asked.
type AWSCredentialsError struct{ Err error }

func (e *AWSCredentialsError) Error() string { return "AWS_MSK_IAM credentials: " + e.Err.Error() }
func (e *AWSCredentialsError) Unwrap() error { return e.Err }

// awsMechanism is AWS_MSK_IAM with the credentials of the AWS SDK's
// default chain, in its order: the environment, a web identity token
// (IRSA), the shared files' profile, a container credentials endpoint
// (EKS Pod Identity, ECS), the instance profile. The chain is chosen
// once, here; the credentials are fetched on the first authentication
// and kept in the SDK's cache, which fetches them again awsRefreshBefore
// their expiry. franz-go calls the function on every authentication of
// every connection, re-authentications included, so rotated credentials
// reach new sessions without a restart. opts go after the router's own
// (tests point the chain at their own files and endpoints).
//
// The region is franz-go's: the broker host's
// (b-1.x.kafka.REGION.amazonaws.com), else AWS_REGION or
// AWS_DEFAULT_REGION; a profile's region is not read.
func awsMechanism(ctx context.Context, opts ...func(*awsconfig.LoadOptions) error) (sasl.Mechanism, error) {
	opts = append([]func(*awsconfig.LoadOptions) error{
		awsconfig.WithCredentialsCacheOptions(func(o *awssdk.CredentialsCacheOptions) { o.ExpiryWindow = awsRefreshBefore }),
	}, opts...)
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		// A shared file that does not parse, a profile named that is
		// not there: nothing will ever authenticate.
		return nil, fmt.Errorf("AWS_MSK_IAM: load the AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return nil, ErrNoAWSCredentials
	}
	// The last resort of the chain is the instance profile: when it is
	// what the chain fell back to, its failure means none was found.
	lastResort := false
	if c, ok := cfg.Credentials.(*awssdk.CredentialsCache); ok {
		lastResort = slices.Equal(c.ProviderSources(), []awssdk.CredentialSource{awssdk.CredentialSourceIMDS})
	}
	creds := cfg.Credentials
	return aws.ManagedStreamingIAM(func(ctx context.Context) (aws.Auth, error) {
		c, err := creds.Retrieve(ctx)
		switch {
		case err != nil && lastResort:
			return aws.Auth{}, fmt.Errorf("%w (the instance metadata service: %w)", ErrNoAWSCredentials, err)
		case err != nil:
			return aws.Auth{}, &AWSCredentialsError{Err: err}
		case c.AccessKeyID == "" || c.SecretAccessKey == "":
			return aws.Auth{}, ErrNoAWSCredentials
		}
		return aws.Auth{AccessKey: c.AccessKeyID, SecretKey: c.SecretAccessKey, SessionToken: c.SessionToken, UserAgent: "sidestream"}, nil
	}), nil
}
