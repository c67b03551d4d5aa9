package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/cronlock/cronlock/internal/config"
)

// kinds are the objects a manifest here may hold, by "apiVersion kind",
// with the upstream Go type the document must decode into. A kind missing
// here is rejected: add it when a manifest needs it.
var kinds = map[string]func() any{
	"v1 ConfigMap":                             func() any { return new(corev1.ConfigMap) },
	"v1 Secret":                                func() any { return new(corev1.Secret) },
	"v1 Service":                               func() any { return new(corev1.Service) },
	"v1 ServiceAccount":                        func() any { return new(corev1.ServiceAccount) },
	"apps/v1 Deployment":                       func() any { return new(appsv1.Deployment) },
	"apps/v1 StatefulSet":                      func() any { return new(appsv1.StatefulSet) },
	"policy/v1 PodDisruptionBudget":            func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.k8s.io/v1 NetworkPolicy":       func() any { return new(networkingv1.NetworkPolicy) },
	"rbac.authorization.k8s.io/v1 Role":        func() any { return new(rbacv1.Role) },
	"rbac.authorization.k8s.io/v1 RoleBinding": func() any { return new(rbacv1.RoleBinding) },
}

// manifest is one YAML document of a manifest file, decoded.
type manifest struct {
	line int // of the document's first line
	obj  any // *corev1.ConfigMap, *appsv1.Deployment, ...
}

// decodeManifest decodes one YAML document strictly into the Kubernetes
// API type its apiVersion and kind name: an unknown kind, an unknown or
// misspelled field (field names are case-sensitive, as for the API
// server), a duplicate key or a value of the wrong type is an error.
func decodeManifest(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(j, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+" "+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("apiVersion %q kind %q: not a known kind", tm.APIVersion, tm.Kind)
	}
	obj, err := decodeStrict(j, newObj())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tm.Kind, err)
	}
	return obj, nil
}

// decodeStrict decodes j into obj as the API server would, rejecting
// unknown and duplicate fields.
func decodeStrict(j []byte, obj any) (any, error) {
	strict, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return nil, err
	}
	return obj, errors.Join(strict...)
}

// yamlDocs splits a multi-document YAML file at its "---" lines, with the
// line number each document starts on; empty documents (comments only) are
// dropped.
func yamlDocs(text string) (docs []string, lines []int) {
	start, cur := 1, []string{}
	flush := func() {
		doc := strings.Join(cur, "\n")
		if hasContent(doc) {
			docs, lines = append(docs, doc+"\n"), append(lines, start)
		}
	}
	for i, l := range strings.Split(text, "\n") {
		if strings.TrimRight(l, " ") == "---" {
			flush()
			start, cur = i+2, nil
			continue
		}
		cur = append(cur, l)
	}
	flush()
	return docs, lines
}

func hasContent(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return true
		}
	}
	return false
}

// loadManifests type-checks every document of a manifest file.
func loadManifests(t *testing.T, file string) []manifest {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs, lines := yamlDocs(string(b))
	var ms []manifest
	for i, doc := range docs {
		obj, err := decodeManifest([]byte(doc))
		if err != nil {
			t.Errorf("%s:%d: %v", file, lines[i], err)
			continue
		}
		ms = append(ms, manifest{lines[i], obj})
	}
	return ms
}

// only returns the single object of type T in ms.
func only[T any](t *testing.T, ms []manifest) T {
	t.Helper()
	var found []T
	for _, m := range ms {
		if o, ok := m.obj.(T); ok {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("kubernetes.yaml: %d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

// The checking function rejects what a typo would produce; each case is a
// real document of kubernetes.yaml with one mistake.
func TestDecodeManifestRejects(t *testing.T) {
	b, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := yamlDocs(string(b))
	var deployment string
	for _, d := range docs {
		if strings.Contains(d, "\nkind: Deployment\n") {
			deployment = d
		}
	}
	if _, err := decodeManifest([]byte(deployment)); err != nil {
		t.Fatalf("the unchanged Deployment: %v", err)
	}
	for _, c := range []struct{ name, old, new, want string }{
		{"misspelled field", "readinessProbe:", "readinesProbe:", "readinesProbe"},
		{"field in the wrong case", "terminationGracePeriodSeconds:", "terminationgraceperiodseconds:", "terminationgraceperiodseconds"},
		{"field at the wrong level", "      automountServiceAccountToken:", "      automountServiceAccount:", "automountServiceAccount"},
		{"unknown kind", "kind: Deployment", "kind: Deploymnet", "Deploymnet"},
		{"kind of another API group", "apiVersion: apps/v1", "apiVersion: v1", "not a known kind"},
		{"wrong type", "replicas: 3", "replicas: three", "replicas"},
		{"duplicate key", "  replicas: 3\n", "  replicas: 3\n  replicas: 2\n", "replicas"},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := strings.Replace(deployment, c.old, c.new, 1)
			if bad == deployment {
				t.Fatalf("%q is not in the Deployment", c.old)
			}
			_, err := decodeManifest([]byte(bad))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// kubernetes.yaml as a whole: what each object refers to exists, and the
// numbers agree with the cronlock configuration it mounts.
func TestKubernetes(t *testing.T) {
	ms := loadManifests(t, "kubernetes.yaml")
	if t.Failed() {
		t.FailNow()
	}
	for _, m := range ms {
		if _, ok := m.obj.(*corev1.Secret); ok {
			// kubectl apply would overwrite the Secret the header creates.
			t.Errorf("kubernetes.yaml:%d: a Secret; secrets are created with kubectl, not applied", m.line)
		}
	}
	cm := only[*corev1.ConfigMap](t, ms)
	dep := only[*appsv1.Deployment](t, ms)
	pdb := only[*policyv1.PodDisruptionBudget](t, ms)
	cfg := configMapConfig(t, cm)

	pod := dep.Spec.Template
	for what, sel := range map[string]*metav1.LabelSelector{"Deployment": dep.Spec.Selector, "PodDisruptionBudget": pdb.Spec.Selector} {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil || s.Empty() || !s.Matches(labels.Set(pod.Labels)) {
			t.Errorf("%s selector %v (%v) does not select the pods %v", what, sel, err, pod.Labels)
		}
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 3 {
		t.Errorf("replicas: %v, want 3", dep.Spec.Replicas)
	}
	grace := pod.Spec.TerminationGracePeriodSeconds
	if budget := stopBudget(cfg); grace == nil || float64(*grace) <= budget.Seconds() {
		t.Errorf("terminationGracePeriodSeconds %v: not longer than a stop can take (%v)", grace, budget)
	}
	checkVolumes(t, pod.Spec, cm.Name, createdSecrets(t))
	checkContainer(t, pod, cfg, cm.Data["cronlock.yaml"])
}

// createdSecrets are the Secrets kubernetes.yaml's header creates with
// `kubectl create secret generic NAME`.
func createdSecrets(t *testing.T) map[string]bool {
	b, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#\s+kubectl .*create secret generic (\S+)`).FindAllStringSubmatch(string(b), -1) {
		names[m[1]] = true
	}
	return names
}

// checkVolumes: every mount has a volume, and every ConfigMap and Secret the
// pod uses is one the file defines or the header creates.
func checkVolumes(t *testing.T, pod corev1.PodSpec, configMap string, secrets map[string]bool) {
	t.Helper()
	vols := map[string]bool{}
	for _, v := range pod.Volumes {
		vols[v.Name] = true
		if v.ConfigMap != nil && v.ConfigMap.Name != configMap {
			t.Errorf("volume %s: ConfigMap %q is not in kubernetes.yaml", v.Name, v.ConfigMap.Name)
		}
		if v.Secret != nil && !secrets[v.Secret.SecretName] {
			t.Errorf("volume %s: Secret %q is not created in the header (secrets there: %v)", v.Name, v.Secret.SecretName, secrets)
		}
	}
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if !vols[m.Name] {
				t.Errorf("container %s mounts %q: no such volume", c.Name, m.Name)
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil && !secrets[e.SecretRef.Name] {
				t.Errorf("container %s: envFrom Secret %q is not created in the header", c.Name, e.SecretRef.Name)
			}
		}
	}
}

// natsService is the NATS chart's client Service for release "nats" in the
// namespace "nats" (nats-values.yaml's install command).
const natsService = "nats://nats.nats.svc.cluster.local:4222"

// configMapConfig loads the cronlock configuration in the ConfigMap and
// checks it is cronlock.yaml but for the NATS connection.
func configMapConfig(t *testing.T, cm *corev1.ConfigMap) *config.Config {
	t.Helper()
	cfg, err := parseExample(t, "kubernetes.yaml:cronlock.yaml", []byte(cm.Data["cronlock.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	checkProduction(t, cfg)
	if cfg.NATS.URL != natsService {
		t.Errorf("nats.url %q, want the chart's client Service %s", cfg.NATS.URL, natsService)
	}
	file, err := loadExample(t, "cronlock.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := sameButNATS(cfg), sameButNATS(file); a != b {
		t.Errorf("the ConfigMap differs from cronlock.yaml in more than nats and job env:\n%s\n---\n%s", a, b)
	}
	return cfg
}

// checkContainer: cronlock's container runs the Dockerfile's image as built
// in the header, mounts its files where the configuration expects them,
// and is probed and scraped on the configured HTTP port.
func checkContainer(t *testing.T, pod corev1.PodTemplateSpec, cfg *config.Config, configText string) {
	t.Helper()
	c := pod.Spec.Containers[0]
	df := parseDockerfile(t, "../../Dockerfile")
	if want := append(df.final().execForm(t, "ENTRYPOINT"), df.final().execForm(t, "CMD")...); fmt.Sprint(c.Command) != fmt.Sprint(want) {
		t.Errorf("command %q, want the Dockerfile's ENTRYPOINT and CMD %q", c.Command, want)
	}
	if img := headerImage(t); c.Image != img {
		t.Errorf("image %q, want the one the header builds, %q", c.Image, img)
	}
	if dir := filepath.Dir(cfg.NATS.CredsFile); mountOf(pod.Spec, c, dir).Secret == nil {
		t.Errorf("nats.creds_file %s: no Secret mounted on %s", cfg.NATS.CredsFile, dir)
	}
	// The admin token is a Secret mounted as a file, not in the ConfigMap.
	if p := exampleSecrets[0]; !strings.Contains(configText, "admin_token_file: "+p) ||
		mountOf(pod.Spec, c, filepath.Dir(p)).Secret == nil {
		t.Errorf("http.admin_token_file: want %s, on a mounted Secret", p)
	}
	if mountOf(pod.Spec, c, filepath.Dir(c.Command[len(c.Command)-1])).ConfigMap == nil {
		t.Errorf("command's config %s: not in a mounted ConfigMap", c.Command[len(c.Command)-1])
	}

	_, port, err := net.SplitHostPort(cfg.HTTP.Listen)
	if err != nil {
		t.Fatalf("http.listen: %v", err)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http" || fmt.Sprint(c.Ports[0].ContainerPort) != port {
		t.Errorf("ports %+v, want one named http on http.listen's port %s", c.Ports, port)
	}
	if a := pod.Annotations; a["prometheus.io/scrape"] != "true" || a["prometheus.io/port"] != port || a["prometheus.io/path"] != "/metrics" {
		t.Errorf("scrape annotations %v, want port %s", a, port)
	}
	for name, p := range map[string]struct {
		probe *corev1.Probe
		path  string
	}{"readinessProbe": {c.ReadinessProbe, "/readyz"}, "livenessProbe": {c.LivenessProbe, "/healthz"}, "startupProbe": {c.StartupProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s: %+v, want GET %s on port http", name, p.probe, p.path)
		}
	}
	if s := c.StartupProbe; s != nil && time.Duration(s.PeriodSeconds*s.FailureThreshold)*time.Second < 2*time.Minute {
		t.Errorf("startupProbe gives a start %ds x %d, want at least 2 min", s.PeriodSeconds, s.FailureThreshold)
	}
}

// mountOf is the volume c mounts at dir, or an empty one.
func mountOf(pod corev1.PodSpec, c corev1.Container, dir string) *corev1.VolumeSource {
	for _, m := range c.VolumeMounts {
		if m.MountPath != dir {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name == m.Name {
				return &v.VolumeSource
			}
		}
	}
	return &corev1.VolumeSource{}
}

// headerImage is the tag of kubernetes.yaml's `docker build` line.
func headerImage(t *testing.T) string {
	b, err := os.ReadFile("kubernetes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^#\s+docker build .*-t (\S+) \.$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("kubernetes.yaml: no `docker build ... -t IMAGE .` in the header")
	}
	return m[1]
}
