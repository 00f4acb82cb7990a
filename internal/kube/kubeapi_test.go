//go:build kubeapi

package kube

// The cross-check of objects.go's types against k8s.io/api's, behind the
// kubeapi build tag so that a default build never compiles k8s.io/api:
//
//	go test -tags kubeapi ./internal/kube
//
// (.ci/run runs it). What wsplan sends decodes strictly into k8s.io/api's
// types and marshals back the same; what the API sends, made with
// k8s.io/api's types, decodes into objects.go's with every field wsplan
// reads intact.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// apiSpecs are specs that between them fill every field Objects sets.
func apiSpecs(t *testing.T) map[string]Spec {
	t.Helper()
	full := testSpec(t, 9000)
	full.NodeSelector = map[string]string{"pool": "bench"}
	full.CPU, full.Memory = "1500m", "2Gi"
	plain := testSpec(t, 0)
	plain.Spread, plain.Namespace = false, ""
	cpu := testSpec(t, 7070)
	cpu.CPU = "2"
	return map[string]Spec{"full": full, "plain": plain, "cpu only": cpu}
}

// strict decodes b into v; a field v's type lacks is an error.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// sameJSON says whether a and b are the same JSON value (key order aside).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKubeAPIObjects: each object Objects makes (with Deploy's owner
// reference) decodes strictly into k8s.io/api's type, which marshals back
// to the same JSON: every field is the API's, named and typed as there.
func TestKubeAPIObjects(t *testing.T) {
	for name, s := range apiSpecs(t) {
		t.Run(name, func(t *testing.T) {
			secret, svc, job, err := Objects(s)
			if err != nil {
				t.Fatal(err)
			}
			stored := &Job{ObjectMeta: metav1.ObjectMeta{Name: job.Name, UID: "uid-1"}}
			owner := []metav1.OwnerReference{*metav1.NewControllerRef(stored, jobKind)}
			secret.OwnerReferences, svc.OwnerReferences = owner, owner
			for _, o := range []struct{ ours, theirs any }{
				{secret, &corev1.Secret{}}, {svc, &corev1.Service{}}, {job, &batchv1.Job{}},
			} {
				b := mustJSON(t, o.ours)
				if err := strict(b, o.theirs); err != nil {
					t.Fatalf("%T does not decode strictly into %T: %v\n%s", o.ours, o.theirs, err, b)
				}
				if back := mustJSON(t, o.theirs); !sameJSON(t, b, back) {
					t.Errorf("%T through %T changed:\nours:   %s\ntheirs: %s", o.ours, o.theirs, b, back)
				}
			}
		})
	}
}

// TestKubeAPIManifest: Manifest prints, byte for byte, what k8s.io/api's
// types print for the same objects.
func TestKubeAPIManifest(t *testing.T) {
	for name, s := range apiSpecs(t) {
		t.Run(name, func(t *testing.T) {
			m, err := Manifest(s)
			if err != nil {
				t.Fatal(err)
			}
			docs := strings.Split(string(m), "---\n")
			objs := []any{&corev1.Secret{}, &corev1.Service{}, &batchv1.Job{}}
			if len(docs) != len(objs) {
				t.Fatalf("%d documents, want Secret, Service, Job", len(docs))
			}
			var theirs []string
			for i, o := range objs {
				if err := yaml.UnmarshalStrict([]byte(docs[i]), o); err != nil {
					t.Fatalf("document %d into %T: %v", i, o, err)
				}
				b, err := yaml.Marshal(o)
				if err != nil {
					t.Fatal(err)
				}
				theirs = append(theirs, string(b))
			}
			if want := strings.Join(theirs, "---\n"); string(m) != want {
				t.Errorf("manifest:\n%s\nk8s.io/api's:\n%s", m, want)
			}
		})
	}
}

// subset checks that every value in ours (JSON decoded into any) is in
// theirs at the same path: a field of objects.go read under another name
// (encoding/json matches names case-insensitively) fails here.
func subset(t *testing.T, path string, ours, theirs any) {
	t.Helper()
	switch o := ours.(type) {
	case map[string]any:
		th, ok := theirs.(map[string]any)
		if !ok {
			t.Errorf("%s: ours an object, theirs %v", path, theirs)
			return
		}
		for k, v := range o {
			tv, ok := th[k]
			if !ok {
				t.Errorf("%s.%s: not in the API's JSON", path, k)
				continue
			}
			subset(t, path+"."+k, v, tv)
		}
	case []any:
		th, ok := theirs.([]any)
		if !ok || len(th) != len(o) {
			t.Errorf("%s: ours %d items, theirs %v", path, len(o), theirs)
			return
		}
		for i := range o {
			subset(t, path+"["+strconv.Itoa(i)+"]", o[i], th[i])
		}
	default:
		if !reflect.DeepEqual(ours, theirs) {
			t.Errorf("%s: ours %v, theirs %v", path, ours, theirs)
		}
	}
}

// decodesAs decodes the JSON of theirs (a k8s.io/api object) into out and
// checks that out is want, and that all of out is in theirs.
func decodesAs(t *testing.T, theirs, out, want any) {
	t.Helper()
	b := mustJSON(t, theirs)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%T into %T: %v", theirs, out, err)
	}
	got := mustJSON(t, out)
	if w := mustJSON(t, want); !sameJSON(t, got, w) {
		t.Errorf("%T decoded from the API's JSON:\ngot:  %s\nwant: %s", out, got, w)
	}
	var vo, vt any
	if err := json.Unmarshal(got, &vo); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vt); err != nil {
		t.Fatal(err)
	}
	subset(t, "", vo, vt)
}

var apiTime = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

// TestKubeAPIJob: a Job as GetJob and CreateJob receive it, with status
// and conditions, decodes with its spec, UID and conditions intact.
func TestKubeAPIJob(t *testing.T) {
	s := apiSpecs(t)["full"]
	_, _, ours, err := Objects(s)
	if err != nil {
		t.Fatal(err)
	}
	theirs := &batchv1.Job{}
	if err := strict(mustJSON(t, ours), theirs); err != nil {
		t.Fatal(err)
	}
	theirs.UID, theirs.ResourceVersion, theirs.CreationTimestamp = "uid-7", "42", apiTime
	one := int32(1)
	theirs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "uid-7"}}
	theirs.Status = batchv1.JobStatus{StartTime: &apiTime, Active: 1, Failed: 1, Ready: &one, Conditions: []batchv1.JobCondition{
		{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: apiTime},
		{Type: batchv1.JobFailed, Status: corev1.ConditionFalse, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline", LastProbeTime: apiTime},
	}}
	want := *ours
	want.ObjectMeta = theirs.ObjectMeta
	want.Status.Conditions = []JobCondition{
		{Type: JobFailureTarget, Status: ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"},
		{Type: JobFailed, Status: ConditionFalse, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"},
	}
	var got Job
	decodesAs(t, theirs, &got, &want)
	if got.UID != "uid-7" || *got.Spec.Completions != 2 || got.Status.Conditions[0].Type != JobFailureTarget {
		t.Errorf("job uid %q completions %d conditions %+v", got.UID, *got.Spec.Completions, got.Status.Conditions)
	}
}

// apiPods are pods in the states Deploy tells apart, with fields it does
// not read set too.
func apiPods() *corev1.PodList {
	pod := func(name string, st corev1.PodStatus) corev1.Pod {
		st.HostIP, st.StartTime, st.QOSClass = "10.0.0.1", &apiTime, corev1.PodQOSGuaranteed
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "bench", UID: types.UID("uid-" + name), CreationTimestamp: apiTime,
				Labels:      map[string]string{LabelRun: "feedbeef"},
				Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: name[len(name)-1:]}},
			Spec:   corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "shard", Image: "img:1"}}},
			Status: st,
		}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: apiTime}}
	return &corev1.PodList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "99"},
		Items: []corev1.Pod{
			pod("ready-0", corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.5", PodIPs: []corev1.PodIP{{IP: "10.1.0.5"}},
				Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: apiTime}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "shard", Ready: true, Image: "img:1", ImageID: "sha", State: running}}}),
			pod("unschedulable-1", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}}),
			pod("pull-2", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "shard", Image: "nope", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}}}),
			pod("exited-3", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "shard", RestartCount: 1,
				State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Signal: 0, Reason: "Error", Message: "bad flag", StartedAt: apiTime}},
				LastTerminationState: running}}}),
			pod("failed-4", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}),
		},
	}
}

// TestKubeAPIPods: a PodList as ListPods receives it decodes with each
// pod's name, index annotation, phase, IP, conditions and container
// states intact, and Deploy's checks read them as they should.
func TestKubeAPIPods(t *testing.T) {
	theirs := apiPods()
	want := PodList{TypeMeta: theirs.TypeMeta, ListMeta: theirs.ListMeta}
	for _, p := range theirs.Items {
		want.Items = append(want.Items, Pod{ObjectMeta: p.ObjectMeta})
	}
	want.Items[0].Status = PodStatus{Phase: PodRunning, PodIP: "10.1.0.5", Conditions: []PodCondition{{Type: PodReady, Status: ConditionTrue}},
		ContainerStatuses: []ContainerStatus{{Name: "shard"}}}
	want.Items[1].Status = PodStatus{Phase: PodPending, Conditions: []PodCondition{{Type: PodScheduled, Status: ConditionFalse,
		Reason: PodReasonUnschedulable, Message: "0/3 nodes are available"}}}
	want.Items[2].Status = PodStatus{Phase: PodPending, ContainerStatuses: []ContainerStatus{{Name: "shard", State: ContainerState{
		Waiting: &ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope"`}}}}}
	want.Items[3].Status = PodStatus{Phase: PodRunning, ContainerStatuses: []ContainerStatus{{Name: "shard", State: ContainerState{
		Terminated: &ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "bad flag"}}}}}
	want.Items[4].Status = PodStatus{Phase: PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}
	var got PodList
	decodesAs(t, theirs, &got, &want)
	if len(got.Items) != 5 {
		t.Fatalf("%d pods, want 5", len(got.Items))
	}
	verdicts := []string{"<nil>", "unschedulable: 0/3 nodes are available", `image pull: ImagePullBackOff: Back-off pulling image "nope"`,
		"shard exited: Error (code 2): bad flag", "failed: Evicted The node was low on resource: memory."}
	for i, p := range got.Items {
		if err := fmt.Sprint(podFailure(p)); !strings.HasPrefix(err, verdicts[i]) {
			t.Errorf("pod %s: podFailure %s, want %s", p.Name, err, verdicts[i])
		}
		if ready := podReady(p); ready != (i == 0) {
			t.Errorf("pod %s: podReady %v", p.Name, ready)
		}
	}
	if p := got.Items[0]; p.Status.PodIP != "10.1.0.5" || p.Annotations[JobCompletionIndexAnnotation] != "0" {
		t.Errorf("ready pod: ip %q, index %q; want 10.1.0.5, 0", p.Status.PodIP, p.Annotations[JobCompletionIndexAnnotation])
	}
}

// TestKubeAPIEvents: an EventList as ListEvents receives it decodes with
// each event's involved object, reason and message intact.
func TestKubeAPIEvents(t *testing.T) {
	theirs := &corev1.EventList{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "EventList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
		Items: []corev1.Event{{
			ObjectMeta: metav1.ObjectMeta{Name: "wsplan-feedbeef.1", Namespace: "bench", CreationTimestamp: apiTime},
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: "bench", Name: "wsplan-feedbeef", UID: "uid-7",
				APIVersion: "batch/v1", ResourceVersion: "42"},
			Reason: "FailedCreate", Message: `pods "x" is forbidden: exceeded quota`, Type: corev1.EventTypeWarning, Count: 3,
			Source: corev1.EventSource{Component: "job-controller"}, FirstTimestamp: apiTime, LastTimestamp: apiTime,
			ReportingController: "job-controller", ReportingInstance: "kcm-1",
		}},
	}
	want := EventList{TypeMeta: theirs.TypeMeta, ListMeta: theirs.ListMeta, Items: []Event{{
		ObjectMeta:     theirs.Items[0].ObjectMeta,
		InvolvedObject: ObjectReference{Kind: "Job", Namespace: "bench", Name: "wsplan-feedbeef"},
		Reason:         "FailedCreate", Message: `pods "x" is forbidden: exceeded quota`,
	}}}
	var got EventList
	decodesAs(t, theirs, &got, &want)
	if e := got.Items[0]; e.InvolvedObject.Name != "wsplan-feedbeef" || e.Reason != "FailedCreate" || !strings.Contains(e.Message, "exceeded quota") {
		t.Errorf("event %+v", e)
	}
}
