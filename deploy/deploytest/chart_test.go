package deploytest

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// testPod is the part of the helm test hook the tests read.
type testPod struct {
	Spec struct {
		RestartPolicy string      `yaml:"restartPolicy"`
		Containers    []container `yaml:"containers"`
		Volumes       []struct {
			Name   string `yaml:"name"`
			Secret *struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"secret"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

// hook returns the one object annotated as a helm test hook, decoded.
func hook(t *testing.T, objs []object) (object, testPod) {
	t.Helper()
	var hooks []object
	for _, o := range objs {
		if _, ok := o.Metadata.Annotations["helm.sh/hook"]; ok {
			hooks = append(hooks, o)
		}
	}
	if len(hooks) != 1 {
		t.Fatalf("rendered %d hooks, want the one helm test pod", len(hooks))
	}
	h := hooks[0]
	if h.Kind != "Pod" || h.Metadata.Annotations["helm.sh/hook"] != "test" {
		t.Fatalf("hook %s/%s annotated %v, want a Pod with helm.sh/hook: test", h.Kind, h.Metadata.Name, h.Metadata.Annotations)
	}
	var p testPod
	h.decode(t, &p)
	if p.Spec.RestartPolicy != "Never" || len(p.Spec.Containers) != 1 {
		t.Fatalf("test pod: restartPolicy %q, %d containers; want Never and one", p.Spec.RestartPolicy, len(p.Spec.Containers))
	}
	return h, p
}

// TestHelmTestHook checks the rendered `helm test` pod, then runs its
// command: the router binary against a running router's /readyz (the
// demo, on an in-process Kafka), in place of the in-cluster Service.
func TestHelmTestHook(t *testing.T) {
	requireHelm(t)
	r := render(t)
	h, p := hook(t, r.objs)
	c := p.Spec.Containers[0]
	if c.Image != r.c.Image {
		t.Errorf("test pod image %q, want the router's %q (it runs `router probe`)", c.Image, r.c.Image)
	}
	if h.Metadata.Annotations["helm.sh/hook-delete-policy"] != "before-hook-creation,hook-succeeded" {
		t.Errorf("hook-delete-policy %q", h.Metadata.Annotations["helm.sh/hook-delete-policy"])
	}
	// The Service must never route to the test pod.
	selected := true
	for k, v := range selectorLabels {
		selected = selected && h.Metadata.Labels[k] == v
	}
	if selected {
		t.Errorf("test pod labels %v match the Service's selector %v", h.Metadata.Labels, selectorLabels)
	}
	url := "http://sidestream.sidestream.svc:8080/readyz"
	if len(c.Args) == 0 || c.Args[0] != "probe" || c.Args[len(c.Args)-1] != url {
		t.Fatalf("test pod args %q, want router probe ... %s", c.Args, url)
	}

	bin := router(t)
	addr := startDemo(t, bin)
	args := slices.Clone(c.Args)
	args[len(args)-1] = "http://" + addr + "/readyz"
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/readyz: 200 OK") {
		t.Fatalf("the hook's command %q against a running router: %v\n%s", args, err, out)
	}
	// Against nothing it fails, as the hook must when no router answers.
	dead := freeAddr(t)
	args[len(args)-1] = "http://" + dead + "/readyz"
	args[1] = "--timeout=1s"
	if out, err := exec.Command(bin, args...).CombinedOutput(); err == nil {
		t.Errorf("the hook's command passed with no router at %s:\n%s", dead, out)
	}
}

// freeAddr is a loopback address nothing listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startDemo runs `router demo` slowly enough to stay up, its HTTP API on a
// free loopback port, and stops it when the test ends.
func startDemo(t *testing.T, bin string) string {
	t.Helper()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "demo", "--records", "1000000", "--rate", "500", "--quiet", "--listen", addr)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("router demo output:\n%.4000s", out.String())
		}
	})
	// The API answers within seconds; probe itself waits for /readyz.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("router demo did not listen on %s within 2 minutes", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHelmTestHookTLS: with the API on HTTPS the test pod asks the
// Service's name over https with the CA of the API's Secret.
func TestHelmTestHookTLS(t *testing.T) {
	requireHelm(t)
	_, p := hook(t, render(t, "--set", "api.tls.existingSecret=api-tls").objs)
	c := p.Spec.Containers[0]
	want := []string{"probe", "--timeout=2m", "--ca-file=/etc/sidestream/api-tls/ca.crt", "https://sidestream.sidestream.svc:8080/readyz"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/sidestream/api-tls" || len(p.Spec.Volumes) != 1 ||
		p.Spec.Volumes[0].Name != c.VolumeMounts[0].Name || p.Spec.Volumes[0].Secret == nil || p.Spec.Volumes[0].Secret.SecretName != "api-tls" {
		t.Errorf("the CA is not mounted from Secret api-tls: mounts %+v, volumes %+v", c.VolumeMounts, p.Spec.Volumes)
	}
	if objs := parse(t, template(t, "--set", "tests.enabled=false")); slices.ContainsFunc(objs, func(o object) bool {
		return o.Metadata.Annotations["helm.sh/hook"] != ""
	}) {
		t.Error("tests.enabled=false still renders a hook")
	}
}

// TestChartExtras: the image digest, envFrom, init containers, sidecars,
// Ingress, HTTPRoute, OAUTHBEARER credentials from a Secret, and the
// NetworkPolicy letting the test pod in (ci/extras-values.yaml).
func TestChartExtras(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "extras")...)
	const digest = "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945"
	if r.c.Image != "sidestream/router@"+digest {
		t.Errorf("image %q, want repository@digest", r.c.Image)
	}
	if _, p := hook(t, r.objs); p.Spec.Containers[0].Image != r.c.Image {
		t.Errorf("test pod image %q, want %q", p.Spec.Containers[0].Image, r.c.Image)
	}
	if len(r.c.EnvFrom) != 1 || r.c.EnvFrom[0].SecretRef == nil || r.c.EnvFrom[0].SecretRef.Name != "router-extra-env" {
		t.Errorf("envFrom %+v", r.c.EnvFrom)
	}
	if len(r.pod.InitContainers) != 1 || r.pod.InitContainers[0].Name != "wait-for-dns" {
		t.Errorf("initContainers %+v", r.pod.InitContainers)
	}
	if len(r.pod.Containers) != 2 || r.pod.Containers[1].Name != "log-shipper" {
		t.Errorf("containers %+v, want router then log-shipper", r.pod.Containers)
	}
	if v, _, _, _ := r.env("SIDESTREAM_SASL_MECHANISM"); v != "OAUTHBEARER" {
		t.Errorf("SIDESTREAM_SASL_MECHANISM %q", v)
	}
	checkSecretEnv(t, r, map[string]string{"SIDESTREAM_SASL_OAUTH_CLIENT_SECRET": "kafka-oauth/oauth-client-secret",
		"SIDESTREAM_SASL_OAUTH_CLIENT_ID": "kafka-oauth/oauth-client-id?"})

	var ing struct {
		Spec struct {
			IngressClassName string `yaml:"ingressClassName"`
			TLS              []struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"tls"`
			Rules []struct {
				Host string `yaml:"host"`
				HTTP struct {
					Paths []struct {
						Path    string `yaml:"path"`
						Backend struct {
							Service struct {
								Name string `yaml:"name"`
								Port struct {
									Name string `yaml:"name"`
								} `yaml:"port"`
							} `yaml:"service"`
						} `yaml:"backend"`
					} `yaml:"paths"`
				} `yaml:"http"`
			} `yaml:"rules"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "Ingress").decode(t, &ing)
	if s := ing.Spec; s.IngressClassName != "nginx" || len(s.TLS) != 1 || s.TLS[0].SecretName != "sidestream-web-tls" || len(s.Rules) != 1 ||
		s.Rules[0].Host != "sidestream.example.com" || len(s.Rules[0].HTTP.Paths) != 1 ||
		s.Rules[0].HTTP.Paths[0].Backend.Service.Name != "sidestream" || s.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name != "http" {
		t.Errorf("Ingress %+v", s)
	}
	var route struct {
		Spec struct {
			ParentRefs []map[string]string `yaml:"parentRefs"`
			Hostnames  []string            `yaml:"hostnames"`
			Rules      []struct {
				BackendRefs []struct {
					Name string `yaml:"name"`
					Port int    `yaml:"port"`
				} `yaml:"backendRefs"`
			} `yaml:"rules"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "HTTPRoute").decode(t, &route)
	if s := route.Spec; len(s.ParentRefs) != 1 || s.ParentRefs[0]["name"] != "shared-gateway" || !slices.Equal(s.Hostnames, []string{"sidestream.example.com"}) ||
		len(s.Rules) != 1 || len(s.Rules[0].BackendRefs) != 1 || s.Rules[0].BackendRefs[0].Name != "sidestream" || s.Rules[0].BackendRefs[0].Port != 8080 {
		t.Errorf("HTTPRoute %+v", s)
	}
	checkPolicyAdmitsTestPod(t, r.objs)
}

// checkPolicyAdmitsTestPod: some peer of the NetworkPolicy selects the
// helm test pod's labels, or its check of /readyz could never pass.
func checkPolicyAdmitsTestPod(t *testing.T, objs []object) {
	t.Helper()
	h, _ := hook(t, objs)
	var np struct {
		Spec struct {
			Ingress []struct {
				From []struct {
					PodSelector *struct {
						MatchLabels map[string]string `yaml:"matchLabels"`
					} `yaml:"podSelector"`
				} `yaml:"from"`
			} `yaml:"ingress"`
		} `yaml:"spec"`
	}
	one(t, objs, "NetworkPolicy").decode(t, &np)
	for _, in := range np.Spec.Ingress {
		for _, f := range in.From {
			if f.PodSelector == nil {
				continue
			}
			admits := true
			for k, v := range f.PodSelector.MatchLabels {
				admits = admits && h.Metadata.Labels[k] == v
			}
			if admits {
				return
			}
		}
	}
	t.Errorf("no peer of the NetworkPolicy selects the test pod's labels %v", h.Metadata.Labels)
}

// checkSecretEnv: each variable comes from SECRET/KEY (a trailing "?":
// an optional key).
func checkSecretEnv(t *testing.T, r rendered, want map[string]string) {
	t.Helper()
	for name, ref := range want {
		var got string
		for _, e := range r.c.Env {
			if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				k := e.ValueFrom.SecretKeyRef
				got = k.Name + "/" + k.Key
				if k.Optional {
					got += "?"
				}
			}
		}
		if got != ref {
			t.Errorf("%s from %q, want %q", name, got, ref)
		}
	}
}

// TestChartMSKIAM: AWS_MSK_IAM's credentials from an existing Secret
// (ci/msk-values.yaml), and none of them without one.
func TestChartMSKIAM(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "msk")...)
	checkSecretEnv(t, r, map[string]string{"AWS_ACCESS_KEY_ID": "msk-credentials/aws-access-key-id",
		"AWS_SECRET_ACCESS_KEY": "msk-credentials/aws-secret-access-key", "AWS_SESSION_TOKEN": "msk-credentials/aws-session-token?"})
	for name, want := range map[string]string{"AWS_REGION": "eu-west-1", "SIDESTREAM_SASL_MECHANISM": "AWS_MSK_IAM", "SIDESTREAM_SECURITY_PROTOCOL": "sasl_ssl"} {
		if v, _, _, ok := r.env(name); !ok || v != want {
			t.Errorf("%s = %q (set %v), want %q", name, v, ok, want)
		}
	}
	d := render(t)
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "SIDESTREAM_SASL_MECHANISM",
		"SIDESTREAM_SASL_OAUTH_CLIENT_ID", "SIDESTREAM_SASL_OAUTH_CLIENT_SECRET"} {
		if _, _, _, ok := d.env(name); ok {
			t.Errorf("the default render sets %s", name)
		}
	}
}

// TestChartExtrasFail: values the new settings cannot work with.
func TestChartExtrasFail(t *testing.T) {
	requireHelm(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"mechanism twice", []string{"--set", "kafka.saslMechanism=PLAIN", "--set", "kafka.existingSecret=creds"},
			"kafka.saslMechanism and kafka.existingSecret both set SIDESTREAM_SASL_MECHANISM"},
		{"route without gateway", []string{"--set", "httpRoute.enabled=true"}, "httpRoute.enabled needs httpRoute.parentRefs"},
		{"digest not sha256", []string{"--set", "image.digest=latest"}, "/image/digest"},
		{"unknown mechanism", []string{"--set", "kafka.saslMechanism=GSSAPI"}, "/kafka/saslMechanism"},
		{"test timeout not a duration", []string{"--set", "tests.timeout=soon"}, "/tests/timeout"},
		{"ingress path not absolute", []string{"--set", "ingress.enabled=true", "--set", "ingress.hosts[0].paths[0].path=ui"}, "path"},
		{"unknown ingress value", []string{"--set", "ingress.host=x"}, "host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"template", releaseName, chartDir}, c.args...)
			_, errOut, err := helm(t, args...)
			if err == nil || !strings.Contains(errOut, c.want) {
				t.Errorf("helm %s: err %v, stderr %q; want a failure naming %q", strings.Join(args, " "), err, errOut, c.want)
			}
		})
	}
}
