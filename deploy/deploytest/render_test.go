package deploytest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidestream/sidestream/internal/config"
	"github.com/sidestream/sidestream/internal/stagetwo"
)

// The parts of the rendered objects the tests look at.

type workload struct {
	Spec struct {
		Replicas                             *int   `yaml:"replicas"`
		ServiceName                          string `yaml:"serviceName"`
		PodManagementPolicy                  string `yaml:"podManagementPolicy"`
		PersistentVolumeClaimRetentionPolicy *struct {
			WhenDeleted string `yaml:"whenDeleted"`
			WhenScaled  string `yaml:"whenScaled"`
		} `yaml:"persistentVolumeClaimRetentionPolicy"`
		VolumeClaimTemplates []struct {
			Metadata struct {
				Name        string            `yaml:"name"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec struct {
				AccessModes      []string `yaml:"accessModes"`
				StorageClassName *string  `yaml:"storageClassName"`
				Resources        struct {
					Requests map[string]string `yaml:"requests"`
				} `yaml:"resources"`
			} `yaml:"spec"`
		} `yaml:"volumeClaimTemplates"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"metadata"`
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	InitContainers                []container     `yaml:"initContainers"`
	ServiceAccountName            string          `yaml:"serviceAccountName"`
	AutomountServiceAccountToken  *bool           `yaml:"automountServiceAccountToken"`
	TerminationGracePeriodSeconds int             `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               securityContext `yaml:"securityContext"`
	Containers                    []container     `yaml:"containers"`
	Volumes                       []struct {
		Name      string `yaml:"name"`
		ConfigMap *struct {
			Name  string `yaml:"name"`
			Items []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"configMap"`
		EmptyDir *struct{} `yaml:"emptyDir"`
		Secret   *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
			Items       []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
	TopologySpreadConstraints []struct {
		TopologyKey   string `yaml:"topologyKey"`
		LabelSelector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	FSGroup                  *int64 `yaml:"fsGroup"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	Capabilities             struct {
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
	SeccompProfile struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Args    []string `yaml:"args"`
	EnvFrom []struct {
		SecretRef *struct {
			Name string `yaml:"name"`
		} `yaml:"secretRef"`
		ConfigMapRef *struct {
			Name string `yaml:"name"`
		} `yaml:"configMapRef"`
	} `yaml:"envFrom"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			SecretKeyRef *struct {
				Name     string `yaml:"name"`
				Key      string `yaml:"key"`
				Optional bool   `yaml:"optional"`
			} `yaml:"secretKeyRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	StartupProbe    *probe          `yaml:"startupProbe"`
	LivenessProbe   *probe          `yaml:"livenessProbe"`
	ReadinessProbe  *probe          `yaml:"readinessProbe"`
	SecurityContext securityContext `yaml:"securityContext"`
	Resources       struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
	PeriodSeconds    int `yaml:"periodSeconds"`
	FailureThreshold int `yaml:"failureThreshold"`
}

type service struct {
	Spec struct {
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type configMap struct {
	Data map[string]string `yaml:"data"`
}

// rendered is one value set's render, with the workload decoded.
type rendered struct {
	objs []object
	kind string
	w    workload
	pod  podSpec
	c    container // the router container
	top  map[string]any
}

func render(t *testing.T, args ...string) rendered {
	t.Helper()
	r := rendered{objs: parse(t, template(t, args...))}
	var wl []object
	for _, k := range []string{"StatefulSet", "Deployment"} {
		wl = append(wl, find(r.objs, k)...)
	}
	if len(wl) != 1 {
		t.Fatalf("rendered %d workloads, want 1", len(wl))
	}
	r.kind = wl[0].Kind
	wl[0].decode(t, &r.w)
	r.pod = r.w.Spec.Template.Spec
	// The router first; sidecars (values: sidecars) after it.
	if len(r.pod.Containers) == 0 || r.pod.Containers[0].Name != "router" {
		t.Fatalf("want the container named router first, got %+v", r.pod.Containers)
	}
	r.c = r.pod.Containers[0]
	var cm configMap
	one(t, r.objs, "ConfigMap").decode(t, &cm)
	if err := yaml.Unmarshal([]byte(cm.Data["topology.yaml"]), &r.top); err != nil {
		t.Fatalf("topology.yaml in the ConfigMap: %v", err)
	}
	return r
}

func (r rendered) env(name string) (value string, fieldPath string, secret string, ok bool) {
	for _, e := range r.c.Env {
		if e.Name != name {
			continue
		}
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fieldPath = e.ValueFrom.FieldRef.FieldPath
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secret = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
		return e.Value, fieldPath, secret, true
	}
	return "", "", "", false
}

func (r rendered) arg(prefix string) (string, bool) {
	for _, a := range r.c.Args {
		if v, ok := strings.CutPrefix(a, prefix); ok {
			return v, true
		}
	}
	return "", false
}

var selectorLabels = map[string]string{
	"app.kubernetes.io/name":     "sidestream",
	"app.kubernetes.io/instance": releaseName,
}

func TestDefaultRender(t *testing.T) {
	requireHelm(t)
	r := render(t)

	if r.kind != "StatefulSet" {
		t.Errorf("workload %s, want StatefulSet by default", r.kind)
	}
	if r.w.Spec.Replicas == nil || *r.w.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", r.w.Spec.Replicas)
	}
	if !maps.Equal(r.w.Spec.Selector.MatchLabels, selectorLabels) {
		t.Errorf("selector %v, want %v", r.w.Spec.Selector.MatchLabels, selectorLabels)
	}
	for k, v := range selectorLabels {
		if r.w.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("pod label %s=%q, want %q", k, r.w.Spec.Template.Metadata.Labels[k], v)
		}
	}

	// The StatefulSet's governing Service exists and is headless.
	var headless bool
	for _, o := range find(r.objs, "Service") {
		var s service
		o.decode(t, &s)
		if !maps.Equal(s.Spec.Selector, selectorLabels) {
			t.Errorf("Service %s selects %v", o.Metadata.Name, s.Spec.Selector)
		}
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != "http" || s.Spec.Ports[0].Port != 8080 || s.Spec.Ports[0].TargetPort != "http" {
			t.Errorf("Service %s ports %+v, want http 8080 -> http", o.Metadata.Name, s.Spec.Ports)
		}
		if o.Metadata.Name == r.w.Spec.ServiceName {
			headless = s.Spec.ClusterIP == "None"
		}
	}
	if !headless {
		t.Errorf("no headless Service named %q", r.w.Spec.ServiceName)
	}

	// Instance id from the pod name, and static membership.
	if _, fp, _, ok := r.env("SIDESTREAM_INSTANCE_ID"); !ok || fp != "metadata.name" {
		t.Errorf("SIDESTREAM_INSTANCE_ID from %q, want the downward API's metadata.name", fp)
	}
	if !slices.Contains(r.c.Args, "--static-membership") {
		t.Errorf("args %q lack --static-membership", r.c.Args)
	}
	// The headless Service's pod DNS name, which the router accepts.
	if v, _, _, _ := r.env("SIDESTREAM_OWNER_URL_TEMPLATE"); v != "http://{instance}.sidestream-headless.sidestream.svc:8080" || stagetwo.CheckOwnerURL(v) != nil {
		t.Errorf("SIDESTREAM_OWNER_URL_TEMPLATE %q (%v)", v, stagetwo.CheckOwnerURL(v))
	}
	if v, _, _, _ := r.env("SIDESTREAM_BROKERS"); v != "kafka:9092" {
		t.Errorf("SIDESTREAM_BROKERS %q", v)
	}
	if _, _, _, ok := r.env("SIDESTREAM_SASL_PASSWORD"); ok {
		t.Error("SASL variables set without kafka.existingSecret")
	}
	for _, name := range []string{"SIDESTREAM_SECURITY_PROTOCOL", "SIDESTREAM_TLS_CA_FILE", "SIDESTREAM_TLS_SERVER_NAME"} {
		if _, _, _, ok := r.env(name); ok {
			t.Errorf("%s set by default", name)
		}
	}
	for _, v := range r.pod.Volumes {
		if v.Secret != nil {
			t.Errorf("a Secret volume %s by default", v.Name)
		}
	}
	if r.c.Args[0] != "run" || !slices.Contains(r.c.Args, "--config=/etc/sidestream/topology.yaml") || !slices.Contains(r.c.Args, "--listen=:8080") {
		t.Errorf("args %q", r.c.Args)
	}

	// Probes.
	for _, p := range []struct {
		name  string
		probe *probe
		path  string
	}{{"startup", r.c.StartupProbe, "/healthz"}, {"liveness", r.c.LivenessProbe, "/healthz"}, {"readiness", r.c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil {
			t.Errorf("no %s probe", p.name)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "http" {
			t.Errorf("%s probe on %s port %s, want %s on http", p.name, p.probe.HTTPGet.Path, p.probe.HTTPGet.Port, p.path)
		}
	}
	// The startup probe is on /healthz: a pod that waits for brokers, or
	// stands still after a changelog loss or an ACL refusal, is not ready
	// but must not be restarted (/readyz would never pass).
	if sp := r.c.StartupProbe; sp != nil && sp.PeriodSeconds*sp.FailureThreshold < 60 {
		t.Errorf("startup probe allows %ds, want at least a minute to start listening", sp.PeriodSeconds*sp.FailureThreshold)
	}
	// GOMEMLIMIT: 90% of the 1Gi memory limit, in bytes.
	if v, _, _, ok := r.env("GOMEMLIMIT"); !ok || v != "966367641" {
		t.Errorf("GOMEMLIMIT %q (set %v), want 90%% of 1Gi = 966367641", v, ok)
	}
	if len(r.c.Ports) != 1 || r.c.Ports[0].Name != "http" || r.c.Ports[0].ContainerPort != 8080 {
		t.Errorf("ports %+v, want http 8080", r.c.Ports)
	}

	checkGracePeriod(t, r)
	checkSecurity(t, r)

	if len(r.c.Resources.Requests) == 0 || r.c.Resources.Limits["memory"] == "" {
		t.Errorf("resources %+v, want requests and a memory limit", r.c.Resources)
	}
	if a := r.pod.AutomountServiceAccountToken; a == nil || *a {
		t.Error("the service account token is mounted; the router never calls the Kubernetes API")
	}

	// PodDisruptionBudget.
	var pdb struct {
		Spec struct {
			MaxUnavailable int `yaml:"maxUnavailable"`
			Selector       struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "PodDisruptionBudget").decode(t, &pdb)
	if pdb.Spec.MaxUnavailable != 1 || !maps.Equal(pdb.Spec.Selector.MatchLabels, selectorLabels) {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1 over the pods", pdb.Spec)
	}

	// Spread over nodes and zones, each constraint selecting these pods.
	var keys []string
	for _, c := range r.pod.TopologySpreadConstraints {
		keys = append(keys, c.TopologyKey)
		if !maps.Equal(c.LabelSelector.MatchLabels, selectorLabels) {
			t.Errorf("spread on %s selects %v", c.TopologyKey, c.LabelSelector.MatchLabels)
		}
	}
	if !slices.Contains(keys, "kubernetes.io/hostname") {
		t.Errorf("topology spread keys %q, want kubernetes.io/hostname", keys)
	}

	// The example topology and its schema are mounted where it expects them.
	checkConfigMount(t, r)
	if r.top["application_id"] != "logs-by-level" {
		t.Errorf("default topology %v, want the example logs-by-level", r.top)
	}

	none(t, r.objs, "Deployment", "HorizontalPodAutoscaler", "ScaledObject", "ServiceMonitor", "PodMonitor", "PrometheusRule")
}

// checkGracePeriod: Kubernetes must not kill a stopping pod before it ends
// its transaction (up to the transaction timeout), finishes the commit
// interval and leaves the group within shutdown_timeout.
func checkGracePeriod(t *testing.T, r rendered) {
	t.Helper()
	dur := func(what, s, def string) time.Duration {
		if s == "" {
			s = def
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("%s %q: %v", what, s, err)
		}
		return d
	}
	txnArg, ok := r.arg("--transaction-timeout=")
	if !ok {
		t.Fatal("no --transaction-timeout argument")
	}
	txn := dur("--transaction-timeout", txnArg, "")
	str := func(k string) string { s, _ := r.top[k].(string); return s }
	commit := dur("commit_interval", str("commit_interval"), "100ms")
	shutdown := dur("shutdown_timeout", str("shutdown_timeout"), "30s")
	grace := time.Duration(r.pod.TerminationGracePeriodSeconds) * time.Second
	if need := txn + commit + shutdown; grace <= need {
		t.Errorf("terminationGracePeriodSeconds %s, want more than transaction timeout %s + commit interval %s + shutdown timeout %s = %s",
			grace, txn, commit, shutdown, need)
	}
}

func checkSecurity(t *testing.T, r rendered) {
	t.Helper()
	is := func(b *bool, want bool) bool { return b != nil && *b == want }
	ps := r.pod.SecurityContext
	if !is(ps.RunAsNonRoot, true) || ps.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("pod securityContext %+v, want runAsNonRoot and seccomp RuntimeDefault", ps)
	}
	cs := r.c.SecurityContext
	if !is(cs.RunAsNonRoot, true) || cs.RunAsUser == nil || *cs.RunAsUser == 0 {
		t.Errorf("container runs as root: %+v", cs)
	}
	if !is(cs.ReadOnlyRootFilesystem, true) {
		t.Error("container root filesystem is writable")
	}
	if !is(cs.AllowPrivilegeEscalation, false) {
		t.Error("container allows privilege escalation")
	}
	if !slices.Equal(cs.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("capabilities drop %q, want [ALL]", cs.Capabilities.Drop)
	}
	if cs.SeccompProfile.Type != "RuntimeDefault" {
		t.Errorf("container seccomp %q, want RuntimeDefault", cs.SeccompProfile.Type)
	}
}

// checkConfigMount: the ConfigMap is mounted at /etc/sidestream, and every
// schema the topology names is among the mounted files.
func checkConfigMount(t *testing.T, r rendered) {
	t.Helper()
	var mounted bool
	for _, m := range r.c.VolumeMounts {
		if m.Name == "config" && m.MountPath == "/etc/sidestream" {
			mounted = true
		}
	}
	if !mounted {
		t.Fatalf("config volume not mounted at /etc/sidestream: %+v", r.c.VolumeMounts)
	}
	paths := map[string]bool{}
	for _, v := range r.pod.Volumes {
		if v.Name == "config" && v.ConfigMap != nil {
			for _, it := range v.ConfigMap.Items {
				paths[it.Path] = true
			}
		}
	}
	if !paths["topology.yaml"] {
		t.Errorf("topology.yaml not among the mounted files %v", paths)
	}
	inputs, _ := r.top["inputs"].([]any)
	for _, in := range inputs {
		m, _ := in.(map[string]any)
		if s, ok := m["schema"].(string); ok && !paths[s] {
			t.Errorf("the topology's schema %q is not mounted (files %v)", s, paths)
		}
	}
}

func TestChecksumRollsOnTopologyChangeOnly(t *testing.T) {
	requireHelm(t)
	sum := func(args ...string) string {
		t.Helper()
		s := render(t, args...).w.Spec.Template.Metadata.Annotations["checksum/config"]
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(s) {
			t.Fatalf("checksum/config %q, want a sha256", s)
		}
		return s
	}
	base := sum()
	if got := sum("--set", "replicaCount=3"); got != base {
		t.Error("checksum/config changed with replicaCount; it must track the topology only")
	}
	if got := sum("--set-json", `topology={"application_id":"other","inputs":[{"topic":"a"}],"routing":{"default":"drop"},"dirty":{"topic":"d"}}`); got == base {
		t.Error("checksum/config did not change with the topology")
	}
	if got := sum("--set-json", `schemas={"extra.json":{"type":"object"}}`); got == base {
		t.Error("checksum/config did not change with the schemas")
	}
}

// TestTopologyReloadWatch: router.topologyReload: watch passes --watch
// and rolls the pods only for a change of the schemas, never of the
// topology, which the router reloads in place.
func TestTopologyReloadWatch(t *testing.T) {
	requireHelm(t)
	watch := func(args ...string) string {
		t.Helper()
		r := render(t, append([]string{"--set", "router.topologyReload=watch"}, args...)...)
		ann := r.w.Spec.Template.Metadata.Annotations
		if _, ok := ann["checksum/config"]; ok {
			t.Fatalf("watch: the checksum/config roll is still there: %v", ann)
		}
		if !slices.Contains(r.c.Args, "--watch") {
			t.Fatalf("watch: args %q lack --watch", r.c.Args)
		}
		return ann["checksum/schemas"]
	}
	topA := `topology={"application_id":"a","inputs":[{"topic":"logs"}],"routing":{"default":"drop"},"dirty":{"topic":"d"}}`
	topB := `topology={"application_id":"a","inputs":[{"topic":"logs"}],"routing":{"default":"drop"},"dirty":{"topic":"d2"}}`
	schemas := `schemas={"x.json":{"type":"object"}}`
	base := watch("--set-json", topA, "--set-json", schemas)
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(base) {
		t.Fatalf("checksum/schemas %q, want a sha256", base)
	}
	if got := watch("--set-json", topB, "--set-json", schemas); got != base {
		t.Error("watch: a topology change rolls the pods (checksum/schemas changed)")
	}
	if got := watch("--set-json", topA, "--set-json", `schemas={"x.json":{"type":"array"}}`); got == base {
		t.Error("watch: checksum/schemas did not change with the schemas")
	}
	if r := render(t); slices.Contains(r.c.Args, "--watch") {
		t.Errorf("the default (roll) passes --watch: %q", r.c.Args)
	}
}

func TestDeploymentMode(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "deployment")...)
	if r.kind != "Deployment" {
		t.Fatalf("workload %s, want Deployment", r.kind)
	}
	if r.w.Spec.ServiceName != "" {
		t.Errorf("a Deployment with serviceName %q", r.w.Spec.ServiceName)
	}
	if r.w.Spec.Replicas == nil || *r.w.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", r.w.Spec.Replicas)
	}
	if slices.Contains(r.c.Args, "--static-membership") {
		t.Error("static membership on for a Deployment, whose pod names change on every rollout")
	}
	if _, fp, _, _ := r.env("SIDESTREAM_INSTANCE_ID"); fp != "metadata.name" {
		t.Errorf("SIDESTREAM_INSTANCE_ID from %q, want metadata.name", fp)
	}
	if v, _, _, _ := r.env("SIDESTREAM_OWNER_URL_TEMPLATE"); v != "http://{host}:8080" {
		t.Errorf("SIDESTREAM_OWNER_URL_TEMPLATE %q under a Deployment, want the pod address", v)
	}
	if v, _, _, _ := r.env("SIDESTREAM_BROKERS"); v != "kafka-0.kafka:9092,kafka-1.kafka:9092" {
		t.Errorf("SIDESTREAM_BROKERS %q", v)
	}
	if v, _, _, _ := r.env("GOMEMLIMIT"); v != "900MiB" {
		t.Errorf("extraEnv GOMEMLIMIT %q", v)
	}
	if n := countEnv(r, "GOMEMLIMIT"); n != 1 {
		t.Errorf("GOMEMLIMIT set %d times, want once (extraEnv's wins over router.goMemLimit)", n)
	}
	for _, o := range find(r.objs, "Service") {
		if strings.HasSuffix(o.Metadata.Name, "-headless") {
			t.Errorf("headless Service %s rendered for a Deployment", o.Metadata.Name)
		}
	}
	checkGracePeriod(t, r)
	checkSecurity(t, r)
	checkConfigMount(t, r)
	one(t, r.objs, "PodDisruptionBudget")
}

func TestKEDA(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "keda")...)
	var so struct {
		Spec struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
				Name string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicaCount int `yaml:"minReplicaCount"`
			MaxReplicaCount int `yaml:"maxReplicaCount"`
			Advanced        struct {
				HPA struct {
					Behavior struct {
						ScaleDown struct {
							StabilizationWindowSeconds int `yaml:"stabilizationWindowSeconds"`
						} `yaml:"scaleDown"`
					} `yaml:"behavior"`
				} `yaml:"horizontalPodAutoscalerConfig"`
			} `yaml:"advanced"`
			Triggers []struct {
				Type     string            `yaml:"type"`
				Metadata map[string]string `yaml:"metadata"`
			} `yaml:"triggers"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "ScaledObject").decode(t, &so)
	s := so.Spec
	if s.ScaleTargetRef.Kind != r.kind || s.ScaleTargetRef.Name != "sidestream" {
		t.Errorf("scaleTargetRef %+v", s.ScaleTargetRef)
	}
	if s.MinReplicaCount != 2 || s.MaxReplicaCount != 8 {
		t.Errorf("replicas %d..%d, want 2..8", s.MinReplicaCount, s.MaxReplicaCount)
	}
	if s.MinReplicaCount < 1 {
		t.Error("KEDA may scale to zero, but transaction markers keep the lag at 1 per partition")
	}
	if s.Advanced.HPA.Behavior.ScaleDown.StabilizationWindowSeconds < 60 {
		t.Errorf("scale-down stabilisation %ds", s.Advanced.HPA.Behavior.ScaleDown.StabilizationWindowSeconds)
	}
	if len(s.Triggers) != 1 || s.Triggers[0].Type != "kafka" {
		t.Fatalf("triggers %+v, want one kafka trigger", s.Triggers)
	}
	md := s.Triggers[0].Metadata
	want := map[string]string{"bootstrapServers": "kafka:9092", "consumerGroup": "logs-by-level", "topic": "logs",
		"lagThreshold": "5000", "offsetResetPolicy": "earliest", "allowIdleConsumers": "false"}
	for k, v := range want {
		if md[k] != v {
			t.Errorf("trigger %s %q, want %q", k, md[k], v)
		}
	}
	if r.w.Spec.Replicas != nil {
		t.Errorf("workload sets replicas %d although KEDA scales it", *r.w.Spec.Replicas)
	}
	none(t, r.objs, "HorizontalPodAutoscaler")

	// Broker credentials from the existing Secret.
	for env, key := range map[string]string{"SIDESTREAM_SASL_MECHANISM": "sasl-mechanism", "SIDESTREAM_SASL_USERNAME": "sasl-username", "SIDESTREAM_SASL_PASSWORD": "sasl-password"} {
		if _, _, sec, ok := r.env(env); !ok || sec != "kafka-credentials/"+key {
			t.Errorf("%s from secret %q, want kafka-credentials/%s", env, sec, key)
		}
	}
}

func TestMonitoringAndHPA(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "monitoring")...)

	var sm struct {
		Metadata struct {
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
				Path string `yaml:"path"`
			} `yaml:"endpoints"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "ServiceMonitor").decode(t, &sm)
	if sm.Metadata.Labels["release"] != "kube-prometheus-stack" {
		t.Errorf("ServiceMonitor labels %v lack the extra label", sm.Metadata.Labels)
	}
	if sm.Spec.Selector.MatchLabels["app.kubernetes.io/component"] != "api" {
		t.Errorf("ServiceMonitor selects %v, want the API Service only (not the headless one)", sm.Spec.Selector.MatchLabels)
	}
	if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "http" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v", sm.Spec.Endpoints)
	}
	// Exactly one Service matches the ServiceMonitor's selector.
	var matched int
	for _, o := range find(r.objs, "Service") {
		if o.Metadata.Labels["app.kubernetes.io/component"] == "api" {
			matched++
		}
	}
	if matched != 1 {
		t.Errorf("%d Services match the ServiceMonitor, want 1", matched)
	}

	alerts := ruleNames(t, r.objs)
	for _, a := range []string{"SidestreamDirtyRatioHigh", "SidestreamLateRatioHigh", "SidestreamConsumerLagHigh",
		"SidestreamTransactionAborts", "SidestreamNoProgress", "SidestreamRestoreSlow", "SidestreamNotReady", "SidestreamCommitSlow", "SidestreamInputRecordsLost",
		"SidestreamChangelogLoss", "SidestreamStateOverflow"} {
		if !slices.Contains(alerts, a) {
			t.Errorf("alert %s missing from %q", a, alerts)
		}
	}

	var hpa struct {
		Spec struct {
			ScaleTargetRef struct {
				Kind string `yaml:"kind"`
			} `yaml:"scaleTargetRef"`
			MinReplicas int `yaml:"minReplicas"`
			MaxReplicas int `yaml:"maxReplicas"`
			Metrics     []struct {
				Resource struct {
					Name string `yaml:"name"`
				} `yaml:"resource"`
			} `yaml:"metrics"`
			Behavior struct {
				ScaleDown struct {
					StabilizationWindowSeconds int `yaml:"stabilizationWindowSeconds"`
				} `yaml:"scaleDown"`
			} `yaml:"behavior"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "HorizontalPodAutoscaler").decode(t, &hpa)
	if hpa.Spec.ScaleTargetRef.Kind != "StatefulSet" || hpa.Spec.MinReplicas != 1 || hpa.Spec.MaxReplicas != 4 {
		t.Errorf("HPA %+v", hpa.Spec)
	}
	if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource.Name != "cpu" {
		t.Errorf("HPA metrics %+v, want CPU", hpa.Spec.Metrics)
	}
	if hpa.Spec.Behavior.ScaleDown.StabilizationWindowSeconds < 60 {
		t.Errorf("HPA scale-down stabilisation %ds", hpa.Spec.Behavior.ScaleDown.StabilizationWindowSeconds)
	}
	if r.w.Spec.Replicas != nil {
		t.Error("workload sets replicas although the HPA scales it")
	}
	none(t, r.objs, "ScaledObject", "PodMonitor")
}

func TestPodMonitor(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "podmonitor")...)
	var pm struct {
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `yaml:"matchLabels"`
			} `yaml:"selector"`
			Endpoints []struct {
				Port string `yaml:"port"`
			} `yaml:"podMetricsEndpoints"`
		} `yaml:"spec"`
	}
	one(t, r.objs, "PodMonitor").decode(t, &pm)
	if !maps.Equal(pm.Spec.Selector.MatchLabels, selectorLabels) || len(pm.Spec.Endpoints) != 1 || pm.Spec.Endpoints[0].Port != "http" {
		t.Errorf("PodMonitor %+v", pm.Spec)
	}
	none(t, r.objs, "ServiceMonitor")
	if slices.Contains(ruleNames(t, r.objs), "SidestreamNotReady") {
		t.Error("SidestreamNotReady rendered although disabled")
	}
	for _, e := range ruleExprs(t, r.objs) {
		if !strings.Contains(e, `{job="sidestream",env="prod"}`) && strings.Contains(e, "{") {
			t.Errorf("rule does not use the custom selector: %s", e)
		}
	}
	for _, a := range []string{"--session-timeout=20s", "--workers=4"} {
		if !slices.Contains(r.c.Args, a) {
			t.Errorf("args %q lack %s", r.c.Args, a)
		}
	}
	if slices.Contains(r.c.Args, "--static-membership") {
		t.Error("--static-membership although router.staticMembership is false")
	}
}

type ruleGroup struct {
	Spec struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	} `yaml:"spec"`
}

func ruleNames(t *testing.T, objs []object) []string {
	t.Helper()
	var rg ruleGroup
	one(t, objs, "PrometheusRule").decode(t, &rg)
	var names []string
	for _, g := range rg.Spec.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
		}
	}
	return names
}

func ruleExprs(t *testing.T, objs []object) []string {
	t.Helper()
	var exprs []string
	for _, o := range find(objs, "PrometheusRule") {
		var rg ruleGroup
		o.decode(t, &rg)
		for _, g := range rg.Spec.Groups {
			for _, r := range g.Rules {
				exprs = append(exprs, r.Expr)
			}
		}
	}
	return exprs
}

// TestTLS: the TLS Secret is mounted read-only at /etc/sidestream/tls with
// only the files asked for, the SIDESTREAM_TLS_* variables point into it,
// and extraVolumes/extraVolumeMounts are passed through.
func TestTLS(t *testing.T) {
	requireHelm(t)
	r := render(t, valueSetArgs(t, "tls")...)
	wantEnv := map[string]string{
		"SIDESTREAM_SECURITY_PROTOCOL": "sasl_ssl",
		"SIDESTREAM_TLS_CA_FILE":       "/etc/sidestream/tls/ca.crt",
		"SIDESTREAM_TLS_CERT_FILE":     "/etc/sidestream/tls/tls.crt",
		"SIDESTREAM_TLS_KEY_FILE":      "/etc/sidestream/tls/tls.key",
		"SIDESTREAM_TLS_SERVER_NAME":   "kafka.example.internal",
	}
	for name, want := range wantEnv {
		if v, _, _, ok := r.env(name); !ok || v != want {
			t.Errorf("%s %q (set %v), want %q", name, v, ok, want)
		}
	}
	if _, _, sec, _ := r.env("SIDESTREAM_SASL_PASSWORD"); sec != "kafka-credentials/sasl-password" {
		t.Errorf("SIDESTREAM_SASL_PASSWORD from secret %q", sec)
	}
	mounts := map[string]string{} // name -> path
	for _, m := range r.c.VolumeMounts {
		mounts[m.Name] = m.MountPath
		if m.Name == "kafka-tls" && !m.ReadOnly {
			t.Error("kafka-tls mounted read-write")
		}
	}
	if mounts["kafka-tls"] != "/etc/sidestream/tls" {
		t.Errorf("kafka-tls mounted at %q, want /etc/sidestream/tls", mounts["kafka-tls"])
	}
	if mounts["extra-certs"] != "/etc/extra-certs" {
		t.Errorf("extraVolumeMounts: extra-certs at %q, want /etc/extra-certs", mounts["extra-certs"])
	}
	var files []string
	var tlsVol, extraVol bool
	for _, v := range r.pod.Volumes {
		switch v.Name {
		case "kafka-tls":
			tlsVol = true
			if v.Secret == nil || v.Secret.SecretName != "kafka-tls" {
				t.Fatalf("kafka-tls volume %+v, want Secret kafka-tls", v.Secret)
			}
			if m := v.Secret.DefaultMode; m == nil || *m&0o007 != 0 {
				t.Errorf("TLS files readable by others (defaultMode %v)", m)
			}
			for _, it := range v.Secret.Items {
				if it.Key != it.Path {
					t.Errorf("secret key %s mounted as %s", it.Key, it.Path)
				}
				files = append(files, it.Path)
			}
		case "extra-certs":
			extraVol = v.ConfigMap != nil && v.ConfigMap.Name == "extra-certs"
		}
	}
	if !tlsVol || !extraVol {
		t.Errorf("volumes kafka-tls %v, extra-certs (ConfigMap extra-certs) %v", tlsVol, extraVol)
	}
	if want := []string{"ca.crt", "tls.crt", "tls.key"}; !slices.Equal(files, want) {
		t.Errorf("TLS files %v, want %v", files, want)
	}
	checkConfigMount(t, r)
	checkSecurity(t, r)

	// The CA alone: no client certificate files or variables.
	r = render(t, "--set", "kafka.tls.existingSecret=kafka-ca", "--set", "kafka.securityProtocol=ssl")
	for _, name := range []string{"SIDESTREAM_TLS_CERT_FILE", "SIDESTREAM_TLS_KEY_FILE", "SIDESTREAM_TLS_SERVER_NAME", "SIDESTREAM_SASL_USERNAME"} {
		if _, _, _, ok := r.env(name); ok {
			t.Errorf("%s set without clientCert/serverName/existingSecret", name)
		}
	}
	if v, _, _, _ := r.env("SIDESTREAM_TLS_CA_FILE"); v != "/etc/sidestream/tls/ca.crt" {
		t.Errorf("SIDESTREAM_TLS_CA_FILE %q", v)
	}
	for _, v := range r.pod.Volumes {
		if v.Name == "kafka-tls" && (v.Secret == nil || len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "ca.crt") {
			t.Errorf("CA-only TLS volume %+v, want ca.crt alone", v.Secret)
		}
	}
}

// TestPersistence: persistence.enabled gives every pod its own claim
// (volumeClaimTemplates "state"), mounts it where SIDESTREAM_STATE_DIR
// points, selects the pebble store, and passes the retention policy through;
// the router reads those variables as the chart sets them. Off (the
// default), nothing of it is rendered.
func TestPersistence(t *testing.T) {
	requireHelm(t)
	const mountPath = "/var/lib/sidestream/state" // ci/persistence-values.yaml
	r := render(t, valueSetArgs(t, "persistence")...)
	if r.kind != "StatefulSet" {
		t.Fatalf("workload %s, want StatefulSet", r.kind)
	}
	claims := r.w.Spec.VolumeClaimTemplates
	if len(claims) != 1 {
		t.Fatalf("%d volumeClaimTemplates, want 1", len(claims))
	}
	c := claims[0]
	if c.Metadata.Name != "state" {
		t.Errorf("claim template named %q, want state", c.Metadata.Name)
	}
	if got := c.Spec.Resources.Requests["storage"]; got != "20Gi" {
		t.Errorf("claim requests storage %q, want 20Gi", got)
	}
	if sc := c.Spec.StorageClassName; sc == nil || *sc != "fast-ssd" {
		t.Errorf("claim storageClassName %v, want fast-ssd", sc)
	}
	if !slices.Equal(c.Spec.AccessModes, []string{"ReadWriteOncePod"}) {
		t.Errorf("claim accessModes %v, want [ReadWriteOncePod]", c.Spec.AccessModes)
	}
	if c.Metadata.Annotations["backup.example.com/skip"] != "true" {
		t.Errorf("claim annotations %v", c.Metadata.Annotations)
	}
	var mounted int
	for _, m := range r.c.VolumeMounts {
		if m.Name == "state" {
			mounted++
			if m.MountPath != mountPath || m.ReadOnly {
				t.Errorf("state mounted at %q (readOnly %v), want %s read-write", m.MountPath, m.ReadOnly, mountPath)
			}
		}
	}
	if mounted != 1 {
		t.Errorf("state mounted %d times, want once: %+v", mounted, r.c.VolumeMounts)
	}
	for _, v := range r.pod.Volumes {
		if v.Name == "state" {
			t.Error("a pod volume named state shadows the claim template")
		}
	}
	env := map[string]string{}
	for _, e := range r.c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	if env["SIDESTREAM_STATE_STORE"] != "pebble" || env["SIDESTREAM_STATE_DIR"] != mountPath {
		t.Errorf("SIDESTREAM_STATE_STORE %q, SIDESTREAM_STATE_DIR %q; want pebble, %s",
			env["SIDESTREAM_STATE_STORE"], env["SIDESTREAM_STATE_DIR"], mountPath)
	}
	pol := r.w.Spec.PersistentVolumeClaimRetentionPolicy
	if pol == nil || pol.WhenDeleted != "Retain" || pol.WhenScaled != "Delete" {
		t.Errorf("persistentVolumeClaimRetentionPolicy %+v, want whenDeleted Retain, whenScaled Delete", pol)
	}
	// The volume is writable for the router's uid through the pod's
	// fsGroup; the root filesystem stays read-only.
	if fg := r.pod.SecurityContext.FSGroup; fg == nil || *fg != 65532 {
		t.Errorf("pod fsGroup %v, want 65532", fg)
	}
	checkSecurity(t, r)
	checkConfigMount(t, r)

	// The router, given the rendered topology and the container's
	// environment, keeps a pebble store under the mount.
	var cm configMap
	one(t, r.objs, "ConfigMap").decode(t, &cm)
	cfg, err := config.Load("topology.yaml", []byte(cm.Data["topology.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Apply(config.OverridesFromEnv(func(k string) string { return env[k] })); err != nil {
		t.Fatalf("the container's environment: %v", err)
	}
	if cfg.State.Store != config.StorePebble || cfg.State.Dir != mountPath {
		t.Errorf("router state %+v, want store pebble in %s", cfg.State, mountPath)
	}
	var windows int
	for _, rt := range cfg.Routes {
		if rt.Window != nil {
			windows++
		}
	}
	if windows == 0 {
		t.Error("the persistence value set's topology has no window route: nothing would use the store")
	}

	// The defaults, and the defaults of the two settings left out: no
	// storage class (the cluster's default), retention Retain/Retain.
	r = render(t, "--set", "persistence.enabled=true")
	c = r.w.Spec.VolumeClaimTemplates[0]
	if c.Spec.StorageClassName != nil {
		t.Errorf("storageClassName %q rendered, want none (the cluster's default class)", *c.Spec.StorageClassName)
	}
	if got := c.Spec.Resources.Requests["storage"]; got != "10Gi" || !slices.Equal(c.Spec.AccessModes, []string{"ReadWriteOnce"}) {
		t.Errorf("default claim %s %v, want 10Gi [ReadWriteOnce]", got, c.Spec.AccessModes)
	}
	if pol := r.w.Spec.PersistentVolumeClaimRetentionPolicy; pol == nil || pol.WhenDeleted != "Retain" || pol.WhenScaled != "Retain" {
		t.Errorf("default retention %+v, want Retain/Retain", pol)
	}
	if v, _, _, _ := r.env("SIDESTREAM_STATE_DIR"); v != "/var/lib/sidestream" {
		t.Errorf("default SIDESTREAM_STATE_DIR %q, want /var/lib/sidestream", v)
	}

	// Before Kubernetes 1.27 the policy is left out: claims are retained.
	r = render(t, "--kube-version", "1.26.3", "--set", "persistence.enabled=true")
	if pol := r.w.Spec.PersistentVolumeClaimRetentionPolicy; pol != nil {
		t.Errorf("retention %+v rendered for Kubernetes 1.26, want none", pol)
	}
	if n := len(r.w.Spec.VolumeClaimTemplates); n != 1 {
		t.Errorf("%d volumeClaimTemplates for Kubernetes 1.26, want 1", n)
	}

	// Off by default.
	r = render(t)
	if n := len(r.w.Spec.VolumeClaimTemplates); n != 0 {
		t.Errorf("default render has %d volumeClaimTemplates, want none", n)
	}
	if r.w.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		t.Error("default render has a persistentVolumeClaimRetentionPolicy")
	}
	for _, name := range []string{"SIDESTREAM_STATE_STORE", "SIDESTREAM_STATE_DIR"} {
		if _, _, _, ok := r.env(name); ok {
			t.Errorf("default render sets %s", name)
		}
	}
	for _, m := range r.c.VolumeMounts {
		if m.Name == "state" {
			t.Errorf("default render mounts state at %s", m.MountPath)
		}
	}
}

func countEnv(r rendered, name string) int {
	n := 0
	for _, e := range r.c.Env {
		if e.Name == name {
			n++
		}
	}
	return n
}

// TestGoMemLimit: router.goMemLimit auto follows resources.limits.memory
// in any Kubernetes unit, an explicit value is used as is, "" and no
// memory limit set none, and a unit it cannot read fails the render.
func TestGoMemLimit(t *testing.T) {
	requireHelm(t)
	for _, tc := range []struct {
		args []string
		want string // "" = unset
	}{
		{[]string{"--set", "resources.limits.memory=2Gi"}, "1932735283"},
		{[]string{"--set", "resources.limits.memory=1500M"}, "1350000000"},
		{[]string{"--set", "resources.limits.memory=536870912"}, "483183820"},
		{[]string{"--set", "router.goMemLimit=700MiB"}, "700MiB"},
		{[]string{"--set", "router.goMemLimit="}, ""},
		{[]string{"--set", "resources.limits=null"}, ""},
	} {
		r := render(t, tc.args...)
		v, _, _, ok := r.env("GOMEMLIMIT")
		if tc.want == "" && ok || tc.want != "" && v != tc.want {
			t.Errorf("%v: GOMEMLIMIT %q (set %v), want %q", tc.args, v, ok, tc.want)
		}
	}
	_, stderr, err := helm(t, "template", releaseName, chartDir, "--set", "resources.limits.memory=2X")
	if err == nil || !strings.Contains(stderr, `resources.limits.memory "2X"`) {
		t.Errorf("memory 2X: err %v, stderr %q", err, stderr)
	}
}

// TestTopologySetFile: --set-file topology=FILE gives the topology as a
// string; it is mounted as written and validated as an object is.
func TestTopologySetFile(t *testing.T) {
	requireHelm(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "orders.yaml")
	src := "application_id: from-file\nbrokers: [kafka:9092]\ninputs:\n  - topic: orders\n    format: json\nrouting:\n  default: main\nroutes:\n  - name: main\n    topic: orders.main\ndirty:\n  topic: orders.dirty\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := render(t, "--set-file", "topology="+file)
	if r.top["application_id"] != "from-file" {
		t.Errorf("mounted topology %v, want the file's", r.top)
	}
	var cm configMap
	one(t, r.objs, "ConfigMap").decode(t, &cm)
	if strings.TrimSpace(cm.Data["topology.yaml"]) != strings.TrimSpace(src) {
		t.Errorf("topology.yaml in the ConfigMap:\n%s\nwant the file as written:\n%s", cm.Data["topology.yaml"], src)
	}
	if _, ok := cm.Data["schema.log-event.json"]; ok {
		t.Error("the example's schema is mounted with a topology of one's own")
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("inputs: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := helm(t, "template", releaseName, chartDir, "--set", "kafka.brokers={kafka:9092}", "--set-file", "topology="+bad)
	if err == nil || !strings.Contains(stderr, "topology.application_id is required") {
		t.Errorf("a file without application_id: err %v, stderr %q", err, stderr)
	}
}
