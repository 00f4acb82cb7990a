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
func Objects(s Spec) (*Secret, *Service, *Job, error) {
	meta := metav1.ObjectMeta{Name: s.name(), Namespace: s.namespace(), Labels: s.labels()}
	secret := &Secret{
		TypeMeta:   typeMeta(secretKind),
		ObjectMeta: meta,
		Type:       SecretTypeOpaque,
		Data:       map[string][]byte{},
	}
	for _, f := range []string{shard.CAFile, shard.ShardCertFile, shard.ShardKeyFile} {
		secret.Data[f] = s.Certs[f]
	}
	svc := &Service{
		TypeMeta:   typeMeta(serviceKind),
		ObjectMeta: meta,
		Spec: ServiceSpec{
			ClusterIP: ClusterIPNone,
			Selector:  map[string]string{LabelRun: s.RunID},
			Ports:     []ServicePort{{Name: "shard", Port: s.port(), TargetPort: intstr.FromInt32(s.port())}},
		},
	}
	res, err := s.resources()
	if err != nil {
		return nil, nil, nil, err
	}
	n := int32(s.Shards)
	indexed := IndexedCompletion
	deadline := int64(s.ActiveDeadline / time.Second)
	ttl := int32(s.TTL / time.Second)
	backoff := int32(0)
	job := &Job{
		TypeMeta:   typeMeta(jobKind),
		ObjectMeta: meta,
		Spec: JobSpec{
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
func (s Spec) resources() (ResourceRequirements, error) {
	res := ResourceRequirements{}
	for _, q := range []struct {
		name ResourceName
		v    string
	}{{ResourceCPU, s.CPU}, {ResourceMemory, s.Memory}} {
		if q.v == "" {
			continue
		}
		v, err := resource.ParseQuantity(q.v)
		if err != nil {
			return res, fmt.Errorf("kubernetes.resources.%s: %q: %w", q.name, q.v, err)
		}
		if res.Requests == nil {
			res.Requests, res.Limits = ResourceList{}, ResourceList{}
		}
		res.Requests[q.name], res.Limits[q.name] = v, v
	}
	return res, nil
}

// pod is the shard pods' template: one shard process, non-root on a
// read-only root, the run's certificates mounted from the Secret; spread
// over the nodes when Spread.
func (s Spec) pod(res ResourceRequirements) PodTemplateSpec {
	uid := int64(ShardUID)
	yes, no := true, false
	mode := int32(0o440)
	pod := PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: s.labels()},
		Spec: PodSpec{
			RestartPolicy:                RestartPolicyNever,
			Subdomain:                    s.name(), // <job>-<index>.<service> resolves to each pod
			NodeSelector:                 s.NodeSelector,
			AutomountServiceAccountToken: &no,
			SecurityContext: &PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
				SeccompProfile: &SeccompProfile{Type: SeccompProfileTypeRuntimeDefault},
			},
			Containers: []Container{{
				Name:  "shard",
				Image: s.Image,
				Args: []string{"shard", "--listen", ":" + strconv.Itoa(int(s.port())), "--certs", certsMount,
					"--idle-exit", s.IdleExit.String(), "--loops", "0"},
				Ports:     []ContainerPort{{Name: "shard", ContainerPort: s.port()}},
				Resources: res,
				ReadinessProbe: &Probe{
					ProbeHandler:  ProbeHandler{TCPSocket: &TCPSocketAction{Port: intstr.FromInt32(s.port())}},
					PeriodSeconds: 1,
				},
				VolumeMounts: []VolumeMount{{Name: "certs", MountPath: certsMount, ReadOnly: true}},
				SecurityContext: &SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &Capabilities{Drop: []Capability{"ALL"}},
				},
			}},
			Volumes: []Volume{{Name: "certs", VolumeSource: VolumeSource{
				Secret: &SecretVolumeSource{SecretName: s.name(), DefaultMode: &mode},
			}}},
		},
	}
	if s.Spread {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{LabelRun: s.RunID}}
		pod.Spec.TopologySpreadConstraints = []TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: DoNotSchedule, LabelSelector: sel,
		}}
		pod.Spec.Affinity = &Affinity{PodAntiAffinity: &PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []WeightedPodAffinityTerm{{
				Weight:          100,
				PodAffinityTerm: PodAffinityTerm{LabelSelector: sel, TopologyKey: "kubernetes.io/hostname"},
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
