package kube

// The Kubernetes objects wsplan sends and reads, declared here with only
// the fields it fills in or looks at, instead of imported from k8s.io/api.
// Why: k8s.io/api's core/v1 and batch/v1 (and scheduling/v1alpha3, which
// core/v1 imports) cost about 15 CPU-seconds of a cold `go test ./...` for
// the eight object types wsplan uses (Job, Pod, PodList, Secret, Service,
// Event, EventList and the nested specs), on a budget of 4 minutes.
//
// The wire format is the API's: the same JSON field names, omitempty where
// k8s.io/api has it (on a struct it omits nothing: `resources: {}` and
// Job's `status: {}` print as before), with apimachinery's ObjectMeta,
// TypeMeta, ListMeta, Quantity and IntOrString as k8s.io/api uses them. The names
// follow k8s.io/api's (Job, JobSpec, PodTemplateSpec, PodSpec, Container,
// …), so the code reads as it would with the real types. kubeapi_test.go
// (`go test -tags kubeapi ./internal/kube`) proves the format: every object
// Objects makes decodes strictly into k8s.io/api's type and marshals back
// the same, Manifest is what k8s.io/api's types print, and sample API
// responses made with k8s.io/api's types decode into these intact. A field
// added here needs its case there.

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The API groups' versions (the REST clients' paths) and the kinds of the
// objects wsplan creates (their apiVersion and kind, the Job's owner
// references).
var (
	coreV1      = schema.GroupVersion{Version: "v1"}
	batchV1     = schema.GroupVersion{Group: "batch", Version: "v1"}
	secretKind  = coreV1.WithKind("Secret")
	serviceKind = coreV1.WithKind("Service")
	jobKind     = batchV1.WithKind("Job")
)

// typeMeta is the apiVersion and kind an object of kind gvk carries.
func typeMeta(gvk schema.GroupVersionKind) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
}

// The API's constants wsplan uses, with k8s.io/api's names and values.
const (
	// JobCompletionIndexAnnotation is an Indexed Job's pod's index.
	JobCompletionIndexAnnotation = "batch.kubernetes.io/job-completion-index"
	// ClusterIPNone makes a Service headless.
	ClusterIPNone = "None"
	// PodReasonUnschedulable is the PodScheduled condition's reason when
	// the scheduler cannot place the pod.
	PodReasonUnschedulable = "Unschedulable"

	IndexedCompletion CompletionMode   = "Indexed"
	JobFailed         JobConditionType = "Failed"
	JobFailureTarget  JobConditionType = "FailureTarget"

	ConditionTrue  ConditionStatus = "True"
	ConditionFalse ConditionStatus = "False"

	PodPending PodPhase = "Pending"
	PodRunning PodPhase = "Running"
	PodFailed  PodPhase = "Failed"

	PodReady     PodConditionType = "Ready"
	PodScheduled PodConditionType = "PodScheduled"

	RestartPolicyNever               RestartPolicy                 = "Never"
	SecretTypeOpaque                 SecretType                    = "Opaque"
	SeccompProfileTypeRuntimeDefault SeccompProfileType            = "RuntimeDefault"
	DoNotSchedule                    UnsatisfiableConstraintAction = "DoNotSchedule"
	ResourceCPU                      ResourceName                  = "cpu"
	ResourceMemory                   ResourceName                  = "memory"
)

// The API's enumerations wsplan uses (strings on the wire).
type (
	CompletionMode                string
	JobConditionType              string
	ConditionStatus               string
	PodPhase                      string
	PodConditionType              string
	RestartPolicy                 string
	SecretType                    string
	SeccompProfileType            string
	UnsatisfiableConstraintAction string
	ResourceName                  string
	Capability                    string
)

// ResourceList is a container's quantities by resource (cpu, memory).
type ResourceList map[ResourceName]resource.Quantity

// Job is a batch/v1 Job: the shard pods' Indexed Job.
type Job struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              JobSpec   `json:"spec,omitempty"`
	Status            JobStatus `json:"status,omitempty"`
}

// JobSpec is the part of batch/v1's JobSpec wsplan sets.
type JobSpec struct {
	Parallelism             *int32          `json:"parallelism,omitempty"`
	Completions             *int32          `json:"completions,omitempty"`
	ActiveDeadlineSeconds   *int64          `json:"activeDeadlineSeconds,omitempty"`
	BackoffLimit            *int32          `json:"backoffLimit,omitempty"`
	Template                PodTemplateSpec `json:"template"`
	TTLSecondsAfterFinished *int32          `json:"ttlSecondsAfterFinished,omitempty"`
	CompletionMode          *CompletionMode `json:"completionMode,omitempty"`
}

// JobStatus is the part of batch/v1's JobStatus wsplan reads.
type JobStatus struct {
	Conditions []JobCondition `json:"conditions,omitempty"`
}

// JobCondition is one of a Job's conditions (Failed, FailureTarget, …).
type JobCondition struct {
	Type    JobConditionType `json:"type"`
	Status  ConditionStatus  `json:"status"`
	Reason  string           `json:"reason,omitempty"`
	Message string           `json:"message,omitempty"`
}

// PodTemplateSpec is a Job's pod template.
type PodTemplateSpec struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodSpec `json:"spec,omitempty"`
}

// PodSpec is the part of core/v1's PodSpec wsplan sets.
type PodSpec struct {
	Volumes                      []Volume                   `json:"volumes,omitempty"`
	Containers                   []Container                `json:"containers"`
	RestartPolicy                RestartPolicy              `json:"restartPolicy,omitempty"`
	NodeSelector                 map[string]string          `json:"nodeSelector,omitempty"`
	AutomountServiceAccountToken *bool                      `json:"automountServiceAccountToken,omitempty"`
	SecurityContext              *PodSecurityContext        `json:"securityContext,omitempty"`
	Subdomain                    string                     `json:"subdomain,omitempty"`
	Affinity                     *Affinity                  `json:"affinity,omitempty"`
	TopologySpreadConstraints    []TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// Container is the part of core/v1's Container wsplan sets.
type Container struct {
	Name            string               `json:"name"`
	Image           string               `json:"image,omitempty"`
	Args            []string             `json:"args,omitempty"`
	Ports           []ContainerPort      `json:"ports,omitempty"`
	Resources       ResourceRequirements `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount        `json:"volumeMounts,omitempty"`
	ReadinessProbe  *Probe               `json:"readinessProbe,omitempty"`
	SecurityContext *SecurityContext     `json:"securityContext,omitempty"`
}

// ContainerPort is a port a container listens on.
type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
}

// ResourceRequirements are a container's requests and limits.
type ResourceRequirements struct {
	Limits   ResourceList `json:"limits,omitempty"`
	Requests ResourceList `json:"requests,omitempty"`
}

// Probe is a container's readiness probe.
type Probe struct {
	ProbeHandler  `json:",inline"`
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
}

// ProbeHandler is how a probe checks: here a TCP connect.
type ProbeHandler struct {
	TCPSocket *TCPSocketAction `json:"tcpSocket,omitempty"`
}

// TCPSocketAction probes a port by connecting to it.
type TCPSocketAction struct {
	Port intstr.IntOrString `json:"port"`
}

// VolumeMount mounts a volume into a container.
type VolumeMount struct {
	Name      string `json:"name"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
	MountPath string `json:"mountPath"`
}

// SecurityContext is a container's security settings.
type SecurityContext struct {
	Capabilities             *Capabilities `json:"capabilities,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
}

// Capabilities are the Linux capabilities a container drops.
type Capabilities struct {
	Drop []Capability `json:"drop,omitempty"`
}

// PodSecurityContext is a pod's security settings.
type PodSecurityContext struct {
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	FSGroup        *int64          `json:"fsGroup,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// SeccompProfile is a pod's seccomp profile.
type SeccompProfile struct {
	Type SeccompProfileType `json:"type"`
}

// Volume is a pod's volume: here a Secret's files.
type Volume struct {
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a volume's files come from.
type VolumeSource struct {
	Secret *SecretVolumeSource `json:"secret,omitempty"`
}

// SecretVolumeSource is a Secret mounted as files.
type SecretVolumeSource struct {
	SecretName  string `json:"secretName,omitempty"`
	DefaultMode *int32 `json:"defaultMode,omitempty"`
}

// TopologySpreadConstraint spreads the pods over a topology (the nodes).
type TopologySpreadConstraint struct {
	MaxSkew           int32                         `json:"maxSkew"`
	TopologyKey       string                        `json:"topologyKey"`
	WhenUnsatisfiable UnsatisfiableConstraintAction `json:"whenUnsatisfiable"`
	LabelSelector     *metav1.LabelSelector         `json:"labelSelector,omitempty"`
}

// Affinity is a pod's scheduling affinity: here anti-affinity only.
type Affinity struct {
	PodAntiAffinity *PodAntiAffinity `json:"podAntiAffinity,omitempty"`
}

// PodAntiAffinity keeps pods apart, preferably.
type PodAntiAffinity struct {
	PreferredDuringSchedulingIgnoredDuringExecution []WeightedPodAffinityTerm `json:"preferredDuringSchedulingIgnoredDuringExecution,omitempty"`
}

// WeightedPodAffinityTerm is a preference with its weight.
type WeightedPodAffinityTerm struct {
	Weight          int32           `json:"weight"`
	PodAffinityTerm PodAffinityTerm `json:"podAffinityTerm"`
}

// PodAffinityTerm selects the pods to keep apart from, per topology.
type PodAffinityTerm struct {
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	TopologyKey   string                `json:"topologyKey"`
}

// Secret is a core/v1 Secret: the run's shard certificates.
type Secret struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Data              map[string][]byte `json:"data,omitempty"`
	Type              SecretType        `json:"type,omitempty"`
}

// Service is a core/v1 Service: the headless Service of the pods' names.
type Service struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ServiceSpec   `json:"spec,omitempty"`
	Status            ServiceStatus `json:"status,omitempty"`
}

// ServiceSpec is the part of core/v1's ServiceSpec wsplan sets.
type ServiceSpec struct {
	Ports     []ServicePort     `json:"ports,omitempty"`
	Selector  map[string]string `json:"selector,omitempty"`
	ClusterIP string            `json:"clusterIP,omitempty"`
}

// ServicePort is a port of a Service.
type ServicePort struct {
	Name       string             `json:"name,omitempty"`
	Port       int32              `json:"port"`
	TargetPort intstr.IntOrString `json:"targetPort,omitempty"`
}

// ServiceStatus is empty for wsplan, which reads none of it; declared so
// that the manifest prints `status: {loadBalancer: {}}` as k8s.io/api's
// Service does.
type ServiceStatus struct {
	LoadBalancer LoadBalancerStatus `json:"loadBalancer,omitempty"`
}

// LoadBalancerStatus has no field wsplan uses (see ServiceStatus).
type LoadBalancerStatus struct{}

// Pod is a core/v1 Pod as wsplan reads it: its name, annotations and
// status (its spec is the Job's template).
type Pod struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            PodStatus `json:"status,omitempty"`
}

// PodList is a list of pods.
type PodList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Pod `json:"items"`
}

// PodStatus is the part of core/v1's PodStatus wsplan reads.
type PodStatus struct {
	Phase             PodPhase          `json:"phase,omitempty"`
	Conditions        []PodCondition    `json:"conditions,omitempty"`
	Message           string            `json:"message,omitempty"`
	Reason            string            `json:"reason,omitempty"`
	PodIP             string            `json:"podIP,omitempty"`
	ContainerStatuses []ContainerStatus `json:"containerStatuses,omitempty"`
}

// PodCondition is one of a pod's conditions (PodScheduled, Ready, …).
type PodCondition struct {
	Type    PodConditionType `json:"type"`
	Status  ConditionStatus  `json:"status"`
	Reason  string           `json:"reason,omitempty"`
	Message string           `json:"message,omitempty"`
}

// ContainerStatus is a container's name and state.
type ContainerStatus struct {
	Name  string         `json:"name"`
	State ContainerState `json:"state,omitempty"`
}

// ContainerState is a container's state: waiting or terminated are the
// ones wsplan looks at (running it does not).
type ContainerState struct {
	Waiting    *ContainerStateWaiting    `json:"waiting,omitempty"`
	Terminated *ContainerStateTerminated `json:"terminated,omitempty"`
}

// ContainerStateWaiting is why a container is not running yet.
type ContainerStateWaiting struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// ContainerStateTerminated is how a container ended.
type ContainerStateTerminated struct {
	ExitCode int32  `json:"exitCode"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Event is the part of a core/v1 Event wsplan reads.
type Event struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	InvolvedObject    ObjectReference `json:"involvedObject"`
	Reason            string          `json:"reason,omitempty"`
	Message           string          `json:"message,omitempty"`
}

// EventList is a list of events.
type EventList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Event `json:"items"`
}

// ObjectReference names the object an event is about.
type ObjectReference struct {
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}
