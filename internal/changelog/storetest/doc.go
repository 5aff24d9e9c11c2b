// Package storetest owns the conformance suite every changelog.Store
// backend must pass (the watermill pubsub/tests pattern): a backend's test
// calls Run with a constructor and gets one subtest per property of the
// contract, plus a model-based property test (random operations against a
// map, replayed through Changes and Restore into a second store).
//
// It must never depend on a particular backend, and is imported only by
// tests.
package storetest
