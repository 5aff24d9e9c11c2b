package api

import (
	"net/http"
	"strings"
	"testing"
)

type fakeTables struct{ loaded bool }

func (f fakeTables) TableRow(table, key string) (any, bool, bool, bool) {
	if table != "merchants" {
		return nil, false, false, false
	}
	if key == "m1" {
		return map[string]any{"tier": "vip"}, true, true, f.loaded
	}
	return nil, false, true, f.loaded
}

// GET /tables/{name}/{key}: the row, 404 for an unknown table or key,
// 503 while loading, and never without credentials under bearer auth.
func TestTablesEndpoint(t *testing.T) {
	h := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(), Tables: fakeTables{loaded: true}})
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/tables/merchants/m1", `{"key":"m1","row":{"tier":"vip"},"table":"merchants"}`, 200},
		{"/tables/merchants/m9", `has no row for key \"m9\"`, 404},
		{"/tables/shops/m1", `no table \"shops\"`, 404},
	} {
		rec := get(t, h, c.path, "")
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s", c.path, rec.Code, rec.Body)
		}
	}
	loading := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(), Tables: fakeTables{}})
	if rec := get(t, loading, "/tables/merchants/m1", ""); rec.Code != 503 {
		t.Errorf("loading: %d", rec.Code)
	}
	toks, err := NewTokens("", []string{tokA}, nil)
	if err != nil {
		t.Fatal(err)
	}
	authed := Handler(Config{Probe: fakeProbe{}, Describer: fakeDescriber{}, Tasks: fakeTasks{}, Metrics: http.NotFoundHandler(), Tables: fakeTables{loaded: true}, Auth: Auth{Mode: AuthBearer, Tokens: toks}})
	if rec := get(t, authed, "/tables/merchants/m1", ""); rec.Code != 401 {
		t.Errorf("without a token: %d", rec.Code)
	}
	if rec := get(t, authed, "/tables/merchants/m1", "Bearer "+tokA); rec.Code != 200 {
		t.Errorf("with a token: %d", rec.Code)
	}
}
