package runtime

import (
	"strings"
	"testing"

	"github.com/sidestream/sidestream/internal/stagetwo"
)

func TestOwnerURL(t *testing.T) {
	for _, c := range []struct {
		tmpl  string
		owner stagetwo.Owner
		want  string
	}{
		{"http://{instance}.router-headless.ns.svc:8080", stagetwo.Owner{InstanceID: "router-1", ClientID: "x", Host: "/10.1.2.3"},
			"http://router-1.router-headless.ns.svc:8080/state/errors?key=a+b%26c"},
		{"https://{host}:8443/", stagetwo.Owner{ClientID: "pod-7", Host: "/10.1.2.3"}, "https://10.1.2.3:8443/state/errors?key=a+b%26c"},
		{"http://{host}:8080", stagetwo.Owner{ClientID: "pod-7", Host: "/fd00::7"}, "http://[fd00::7]:8080/state/errors?key=a+b%26c"},
		{"http://{instance}:8080/api", stagetwo.Owner{ClientID: "pod-7"}, "http://pod-7:8080/api/state/errors?key=a+b%26c"},
	} {
		if err := stagetwo.CheckOwnerURL(c.tmpl); err != nil {
			t.Errorf("%s: %v", c.tmpl, err)
		}
		if got := stagetwo.OwnerURL(c.tmpl, &c.owner, "errors", "a b&c"); got != c.want {
			t.Errorf("%s with %+v: %s, want %s", c.tmpl, c.owner, got, c.want)
		}
	}
	for _, bad := range []string{"http://router:8080", "{instance}:8080", "ftp://{host}/", "http://{host}:8080/?a=1", "http://{host}:8080/#x", "http://{host}:bad port"} {
		if err := stagetwo.CheckOwnerURL(bad); err == nil {
			t.Errorf("template %q accepted", bad)
		}
	}
	if _, err := New(compileVariant(t, []string{"127.0.0.1:9"}), WithOwnerURL("http://router:8080")); err == nil || !strings.Contains(err.Error(), "neither {instance} nor {host}") {
		t.Errorf("New with a template naming no owner: %v", err)
	}
}
