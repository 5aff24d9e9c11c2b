// Package tasks is the one lifecycle of the stateful stages' tasks
// (windows, assemblies): a Set holds the task of each partition of a
// stage's repartition topic, builds it once under the partition's
// generation (a build a drop raced with is discarded, its store closed),
// closes it on drop (revoke, lost, abort, new session), hands out the
// changelog records of a commit and checkpoints on-disk stores after it.
//
// It knows tasks only by the small Task interface: what they compute and
// how they restore is the runtime's (package processor). It must never
// import the runtime nor talk to Kafka: it builds records, never sends
// them.
package tasks
