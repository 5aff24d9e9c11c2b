package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/operator/assembly"
	"github.com/sidestream/sidestream/internal/redact"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

func TestAPIWarnings(t *testing.T) {
	all := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}
	lo := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	for _, c := range []struct {
		name string
		a    config.API
		addr net.Addr
		want []string
	}{
		{"none on every interface", config.API{Auth: "none", Samples: "full"}, all, []string{"answers anyone", "api.samples: full"}},
		{"none on loopback", config.API{Auth: "none", Samples: "full"}, lo, nil},
		{"bearer in clear", config.API{Auth: "bearer", Samples: "full"}, all, []string{"travel in clear text"}},
		{"bearer on TLS", config.API{Auth: "bearer", Samples: "full", TLS: config.APITLS{CertFile: "c"}}, all, nil},
	} {
		var buf bytes.Buffer
		apiWarnings(slog.New(slog.NewTextHandler(&buf, nil)), c.a, c.addr)
		out := buf.String()
		if len(c.want) == 0 && out != "" {
			t.Errorf("%s: unexpected warning %s", c.name, out)
		}
		for _, w := range c.want {
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, w) {
				t.Errorf("%s: no %q in %s", c.name, w, out)
			}
		}
	}
}

type fixedState struct{ v any }

func (f fixedState) ReadState(context.Context, string) (any, error) { return f.v, nil }

func TestStateUnderSamples(t *testing.T) {
	win := &stagetwo.WindowStateView{Route: "w", Windows: []json.RawMessage{json.RawMessage(`{"key":"k","last_email":"ann@x.io","n":3}`)}}
	asm := &stagetwo.AssemblyStateView{Route: "a", Held: true}
	asm.Parts = []assembly.Part{{Name: "order", Value: json.RawMessage(`{"email":"bob@x.io","total":9}`)}}
	read := func(mode string, v any) string {
		s := redactedState{r: fixedState{v}, mode: mode, red: redact.New([]string{"last_email", "email"})}
		got, err := s.ReadState(context.Background(), "k")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		return string(b)
	}
	for _, v := range []any{win, asm} {
		full, red, off := read("full", v), read("redacted", v), read("off", v)
		if !strings.Contains(full, "@x.io") {
			t.Errorf("full hides: %s", full)
		}
		if strings.Contains(red, "@x.io") || !strings.Contains(red, `"***"`) || (!strings.Contains(red, `"n":3`) && !strings.Contains(red, `"total":9`)) {
			t.Errorf("redacted: %s", red)
		}
		if strings.Contains(off, "@x.io") || strings.Contains(off, `"n":3`) || strings.Contains(off, `"total":9`) {
			t.Errorf("off shows a value: %s", off)
		}
	}
	if b, _ := json.Marshal(win); !strings.Contains(string(b), "ann@x.io") {
		t.Error("the reader's own view was changed in place")
	}
	if _, err := (redactedState{r: fixedState{map[string]int{"x": 1}}, mode: "off"}).ReadState(context.Background(), "k"); err == nil {
		t.Error("an unknown view passes under off")
	}
}
