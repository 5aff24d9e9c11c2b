package deploytest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// TestChartAPIBearer: auth bearer mounts the token Secret (never a token
// in a manifest), the ServiceMonitor sends Prometheus's token over https,
// and the probes speak https without credentials.
func TestChartAPIBearer(t *testing.T) {
	requireHelm(t)
	r := render(t, "--set", "api.auth=bearer", "--set", "api.bearer.existingSecret=api-tokens", "--set", "api.protectMetrics=true",
		"--set", "api.tls.existingSecret=api-tls", "--set", "monitoring.serviceMonitor.enabled=true", "--set", "api.samples=redacted")
	for name, want := range map[string]string{
		"SIDESTREAM_API_AUTH": "bearer", "SIDESTREAM_API_TOKEN_FILE": "/etc/sidestream/api-tokens/tokens",
		"SIDESTREAM_API_METRICS": "protected", "SIDESTREAM_API_TLS_CERT_FILE": "/etc/sidestream/api-tls/tls.crt",
		"SIDESTREAM_API_TLS_KEY_FILE": "/etc/sidestream/api-tls/tls.key", "SIDESTREAM_API_SAMPLES": "redacted",
	} {
		if v, _, _, ok := r.env(name); !ok || v != want {
			t.Errorf("env %s = %q (set %v), want %q", name, v, ok, want)
		}
	}
	if _, _, _, ok := r.env("SIDESTREAM_API_TLS_CLIENT_CA_FILE"); ok {
		t.Error("a client CA is set without mtls")
	}
	var sm struct {
		Spec struct {
			Endpoints []map[string]any `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "ServiceMonitor").decode(t, &sm)
	ep := sm.Spec.Endpoints[0]
	if ep["scheme"] != "https" {
		t.Errorf("ServiceMonitor scheme %v", ep["scheme"])
	}
	auth, _ := ep["authorization"].(map[string]any)
	cred, _ := auth["credentials"].(map[string]any)
	if auth["type"] != "Bearer" || cred["name"] != "api-tokens" || cred["key"] != "prometheus" {
		t.Errorf("ServiceMonitor authorization %v", ep["authorization"])
	}
	tc, _ := ep["tlsConfig"].(map[string]any)
	ca, _ := tc["ca"].(map[string]any)
	if sec, _ := ca["secret"].(map[string]any); sec["name"] != "api-tls" || sec["key"] != "ca.crt" || tc["serverName"] != "sidestream.sidestream.svc" {
		t.Errorf("ServiceMonitor tlsConfig %v", tc)
	}
	out := template(t, "--set", "api.auth=bearer", "--set", "api.bearer.existingSecret=api-tokens", "--set", "api.tls.existingSecret=api-tls")
	for _, want := range []string{"secretName: api-tokens", "key: tokens", "path: /readyz\n              port: http\n              scheme: HTTPS", "path: /healthz\n              port: http\n              scheme: HTTPS"} {
		if !strings.Contains(out, want) {
			t.Errorf("the render lacks %q", want)
		}
	}
}

func TestChartAPIMTLS(t *testing.T) {
	requireHelm(t)
	r := render(t, "--set", "api.auth=mtls", "--set", "api.tls.existingSecret=api-tls", "--set", "api.protectMetrics=true",
		"--set", "monitoring.podMonitor.enabled=true", "--set", "api.tls.prometheusClientSecret=prom-client")
	if v, _, _, ok := r.env("SIDESTREAM_API_TLS_CLIENT_CA_FILE"); !ok || v != "/etc/sidestream/api-tls/ca.crt" {
		t.Errorf("client CA %q %v", v, ok)
	}
	var pm struct {
		Spec struct {
			Endpoints []map[string]any `yaml:"podMetricsEndpoints"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "PodMonitor").decode(t, &pm)
	tc, _ := pm.Spec.Endpoints[0]["tlsConfig"].(map[string]any)
	cert, _ := tc["cert"].(map[string]any)
	key, _ := tc["keySecret"].(map[string]any)
	if sec, _ := cert["secret"].(map[string]any); sec["name"] != "prom-client" || key["name"] != "prom-client" || key["key"] != "tls.key" {
		t.Errorf("PodMonitor client certificate %v", tc)
	}
	if _, ok := pm.Spec.Endpoints[0]["authorization"]; ok {
		t.Error("a bearer token under mtls")
	}
}

func TestChartNetworkPolicy(t *testing.T) {
	requireHelm(t)
	none(t, render(t).objs, "NetworkPolicy")
	r := render(t, "--set", "networkPolicy.enabled=true", "--set", "networkPolicy.prometheusPodSelector.app=prom")
	var np struct {
		Spec struct {
			PodSelector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"podSelector"`
			PolicyTypes []string `yaml:"policyTypes"`
			Ingress     []struct {
				From []struct {
					PodSelector *struct {
						MatchLabels map[string]string `yaml:"matchLabels"`
					} `yaml:"podSelector"`
					NamespaceSelector any `yaml:"namespaceSelector"`
				} `yaml:"from"`
				Ports []struct {
					Port any `yaml:"port"`
				} `yaml:"ports"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "NetworkPolicy").decode(t, &np)
	s := np.Spec
	if s.PodSelector.MatchLabels["app.kubernetes.io/instance"] != releaseName || len(s.PolicyTypes) != 1 || s.PolicyTypes[0] != "Ingress" {
		t.Errorf("selects %v, types %v", s.PodSelector.MatchLabels, s.PolicyTypes)
	}
	// The release's pods, Prometheus, and the helm test pod (checked by
	// checkPolicyAdmitsTestPod).
	if len(s.Ingress) != 1 || len(s.Ingress[0].From) != 3 {
		t.Fatalf("ingress %+v", s.Ingress)
	}
	checkPolicyAdmitsTestPod(t, r.objs)
	from := s.Ingress[0].From
	if from[0].PodSelector == nil || from[0].PodSelector.MatchLabels["app.kubernetes.io/instance"] != releaseName || from[0].NamespaceSelector != nil {
		t.Errorf("first peer is not the release's pods: %+v", from[0])
	}
	if from[1].PodSelector == nil || from[1].PodSelector.MatchLabels["app"] != "prom" || from[1].NamespaceSelector != nil {
		t.Errorf("second peer is not the namespace's Prometheus: %+v", from[1])
	}
	if len(s.Ingress[0].Ports) != 1 || s.Ingress[0].Ports[0].Port != "http" {
		t.Errorf("ports %+v", s.Ingress[0].Ports)
	}
	var untested struct {
		Spec struct {
			Ingress []struct {
				From []any `yaml:"from"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	one(t, render(t, "--set", "networkPolicy.enabled=true", "--set", "tests.enabled=false").objs, "NetworkPolicy").decode(t, &untested)
	if in := untested.Spec.Ingress; len(in) != 1 || len(in[0].From) != 2 {
		t.Errorf("without the test pod the policy lets in %+v, want the release's pods and Prometheus", in)
	}
}

func TestChartAPIRefuses(t *testing.T) {
	requireHelm(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"bearer without a Secret", []string{"--set", "api.auth=bearer"}, "api.auth: bearer needs api.bearer.existingSecret"},
		{"mtls without TLS", []string{"--set", "api.auth=mtls"}, "api.auth: mtls needs api.tls.existingSecret"},
		{"protected metrics, no auth", []string{"--set", "api.protectMetrics=true"}, "api.protectMetrics needs api.auth bearer or mtls"},
		{"mtls scrape without a client certificate", []string{"--set", "api.auth=mtls", "--set", "api.tls.existingSecret=x", "--set", "api.protectMetrics=true", "--set", "monitoring.serviceMonitor.enabled=true"},
			"needs api.tls.prometheusClientSecret"},
		{"unknown auth", []string{"--set", "api.auth=basic"}, "/api/auth"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, err := helm(t, append([]string{"template", releaseName, chartDir}, c.args...)...)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || !strings.Contains(errOut, c.want) {
				t.Fatalf("err %v:\n%s\nwant %q", err, errOut, c.want)
			}
		})
	}
}
