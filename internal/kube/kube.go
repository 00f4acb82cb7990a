// Package kube runs a plan's remote client shards on Kubernetes: an
// Indexed Job of `wsplan shard --listen` pods, a headless Service for
// their addresses and a Secret with the run's shard certificates, all
// labelled with the run. Deploy creates them, waits until every shard is
// ready (or says clearly why not: image pull, unschedulable, quota) and
// returns the shards' addresses for client.remote; its cleanup deletes
// them. Manifest prints the same objects for users who apply them
// themselves.
//
// Data flow: plan's client.kubernetes → Spec → Objects → Deploy (the
// orchestrator, in the cluster or with a kubeconfig) → addresses →
// shard.Dial as for client.remote.
package kube

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/wsplan/wsplan/internal/shard"
)

// Labels every object carries.
const (
	LabelName      = "app.kubernetes.io/name"       // "wsplan-shard"
	LabelManagedBy = "app.kubernetes.io/managed-by" // "wsplan"
	LabelRun       = "wsplan.dev/run"               // the run's id
	certsMount     = "/etc/wsplan/certs"
	// ShardUID is the non-root user the shard containers run as (the
	// distroless nonroot user the Dockerfile's image uses).
	ShardUID = 65532
)

// Spec is what Deploy and Manifest make, from the plan's client.kubernetes.
type Spec struct {
	RunID        string            // the run's id, in every name and label; NewRunID makes one
	Namespace    string            // default "default"
	Image        string            // the wsplan image (Dockerfile)
	Shards       int               // pods, >= 1
	Port         int               // the shards' listen port; default 7070
	NodeSelector map[string]string // pods run only on nodes with these labels
	CPU, Memory  string            // each pod's request and limit (Kubernetes quantities); "" = none
	Spread       bool              // at most one pod more on any node than on another (topology spread + anti-affinity)
	IdleExit     time.Duration     // a shard exits this long without an orchestrator
	// ActiveDeadline bounds the Job's life (activeDeadlineSeconds), so a
	// SIGKILLed orchestrator leaves nothing running for long.
	ActiveDeadline time.Duration
	// TTL deletes the finished Job and, through their owner, its Service
	// and Secret (ttlSecondsAfterFinished).
	TTL   time.Duration
	Certs map[string][]byte // shard.NewCerts' files; only the shard's go into the Secret
}

// MaxRunID is the longest run id: "wsplan-ID-INDEX", a pod's host name,
// stays a DNS label (63 characters) for any shard index.
const MaxRunID = 40

// runIDForm is a run id's form: a DNS label's characters, lower case.
var runIDForm = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// CheckRunID checks that id can be the run id of object names and labels.
func CheckRunID(id string) error {
	if len(id) > MaxRunID || !runIDForm.MatchString(id) {
		return fmt.Errorf("run id %q: want 1 to %d lower-case letters, digits and inner dashes", id, MaxRunID)
	}
	return nil
}

// NewRunID returns a fresh run id: 8 lower-case hex digits.
func NewRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil { // crypto/rand does not fail on Linux
		return strconv.FormatInt(time.Now().UnixNano()%1e8, 16)
	}
	return hex.EncodeToString(b[:])
}

func (s Spec) name() string { return "wsplan-" + s.RunID }

func (s Spec) labels() map[string]string {
	return map[string]string{LabelName: "wsplan-shard", LabelManagedBy: "wsplan", LabelRun: s.RunID}
}

func (s Spec) port() int32 {
	if s.Port == 0 {
		return 7070
	}
	return int32(s.Port)
}

func (s Spec) namespace() string {
	if s.Namespace == "" {
		return "default"
	}
	return s.Namespace
}

// Objects are the Secret, headless Service and Indexed Job of the spec.
func Objects(s Spec) (*corev1.Secret, *corev1.Service, *batchv1.Job, error) {
	meta := metav1.ObjectMeta{Name: s.name(), Namespace: s.namespace(), Labels: s.labels()}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta,
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	for _, f := range []string{shard.CAFile, shard.ShardCertFile, shard.ShardKeyFile} {
		secret.Data[f] = s.Certs[f]
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{LabelRun: s.RunID},
			Ports:     []corev1.ServicePort{{Name: "shard", Port: s.port(), TargetPort: intstr.FromInt32(s.port())}},
		},
	}
	res, err := s.resources()
	if err != nil {
		return nil, nil, nil, err
	}
	n := int32(s.Shards)
	indexed := batchv1.IndexedCompletion
	deadline := int64(s.ActiveDeadline / time.Second)
	ttl := int32(s.TTL / time.Second)
	backoff := int32(0)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			CompletionMode:          &indexed,
			Completions:             &n,
			Parallelism:             &n,
			BackoffLimit:            &backoff,
			ActiveDeadlineSeconds:   &deadline,
			TTLSecondsAfterFinished: &ttl,
			Template:                s.pod(res),
		},
	}
	return secret, svc, job, nil
}

// resources are the shard container's requests and limits (equal: CPU and
// Memory), none when both are empty.
func (s Spec) resources() (corev1.ResourceRequirements, error) {
	res := corev1.ResourceRequirements{}
	for _, q := range []struct {
		name corev1.ResourceName
		v    string
	}{{corev1.ResourceCPU, s.CPU}, {corev1.ResourceMemory, s.Memory}} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return res, fmt.Errorf("kubernetes.resources.%s: %q: %w", q.name, q.v, err)
		}
		if res.Requests == nil {
			res.Requests, res.Limits = corev1.ResourceList{}, corev1.ResourceList{}
		}
		res.Requests[q.name], res.Limits[q.name] = v, v
	}
	return res, nil
}

// pod is the shard pods' template: one shard process, non-root on a
// read-only root, the run's certificates mounted from the Secret; spread
// over the nodes when Spread.
func (s Spec) pod(res corev1.ResourceRequirements) corev1.PodTemplateSpec {
	uid := int64(ShardUID)
	yes, no := true, false
	mode := int32(0o440)
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: s.labels()},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			Subdomain:                    s.name(), // <job>-<index>.<service> resolves to each pod
			NodeSelector:                 s.NodeSelector,
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  "shard",
				Image: s.Image,
				Args: []string{"shard", "--listen", ":" + strconv.Itoa(int(s.port())), "--certs", certsMount,
					"--idle-exit", s.IdleExit.String(), "--loops", "0"},
				Ports:     []corev1.ContainerPort{{Name: "shard", ContainerPort: s.port()}},
				Resources: res,
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(s.port())}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "certs", MountPath: certsMount, ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: s.name(), DefaultMode: &mode},
			}}},
		},
	}
	if s.Spread {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: s.RunID}}
		pod.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: sel,
		}}
		pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight:          100,
				PodAffinityTerm: corev1.PodAffinityTerm{LabelSelector: sel, TopologyKey: "kubernetes.io/hostname"},
			}},
		}}
	}
	return pod
}

// Manifest is the spec's objects as one YAML stream (Secret, Service,
// Job), for `kubectl apply -f -`.
func Manifest(s Spec) ([]byte, error) {
	secret, svc, job, err := Objects(s)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for i, o := range []any{secret, svc, job} {
		b, err := yaml.Marshal(o)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			buf.WriteString("---\n")
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}
