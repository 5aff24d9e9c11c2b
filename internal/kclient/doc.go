// Package kclient builds the router's Kafka clients one way and says what
// their errors mean.
//
// It owns the security options (TLS, SASL PLAIN and SCRAM, OAUTHBEARER,
// AWS_MSK_IAM) and the hints that explain a refused connection, the
// buffer options of the client section, the admin client, the quiet
// franz-go logger, and the one classifier of client errors: Classify
// says whether an error is retried, aborts the transaction, or ends the
// session. Every client the router and its tools create takes
// SecurityOpts, so none can dial without the topology's security.
//
// It must never import the runtime (processor), the pipeline, the tools
// (sideroute, cmd), the web view (live) or the HTTP API: the tools build
// their clients here without pulling in the runtime.
package kclient
