package audit

import "testing"

// TestSinksOpen: a store named by no flag is left out; an index or table
// not named is the topic, lower-cased.
func TestSinksOpen(t *testing.T) {
	opts := Options{Topic: "Orders.View"}
	closeFn, err := Sinks{ESURL: "http://127.0.0.1:1", MySQLDSN: "u:p@tcp(127.0.0.1:1)/db", MySQLKey: "id"}.Open(&opts)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if opts.Elasticsearch == nil || opts.Elasticsearch.Index != "orders.view" || opts.MySQL == nil || opts.MySQL.Table != "orders.view" || opts.MySQL.KeyColumn != "id" {
		t.Fatalf("targets %+v %+v", opts.Elasticsearch, opts.MySQL)
	}
	opts = Options{Topic: "t"}
	if _, err := (Sinks{ESURL: "http://x", ESIndex: "idx"}).Open(&opts); err != nil || opts.Elasticsearch.Index != "idx" || opts.MySQL != nil {
		t.Fatalf("es only: %v %+v %+v", err, opts.Elasticsearch, opts.MySQL)
	}
}
