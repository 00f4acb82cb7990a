package kube

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	batchclient "k8s.io/client-go/kubernetes/typed/batch/v1"
	fakebatch "k8s.io/client-go/kubernetes/typed/batch/v1/fake"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	fakecore "k8s.io/client-go/kubernetes/typed/core/v1/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeCluster is client-go's fake API server for the two groups wsplan
// uses (Client): one object tracker behind the generated fakes of core/v1
// and batch/v1, as the fake clientset (k8s.io/client-go/kubernetes/fake)
// builds it. That clientset would do as well, but it links every API
// group of Kubernetes: some 160 packages, a third of the suite's cold
// build.
type fakeCluster struct {
	k8stesting.Fake
}

var _ Client = (*fakeCluster)(nil)

// newFakeCluster returns an empty cluster.
func newFakeCluster() *fakeCluster {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err) // the types are client-go's own: cannot fail
		}
	}
	tracker := k8stesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	c := &fakeCluster{}
	c.AddReactor("*", "*", k8stesting.ObjectReaction(tracker))
	return c
}

func (c *fakeCluster) CoreV1() coreclient.CoreV1Interface {
	return &fakecore.FakeCoreV1{Fake: &c.Fake}
}

func (c *fakeCluster) BatchV1() batchclient.BatchV1Interface {
	return &fakebatch.FakeBatchV1{Fake: &c.Fake}
}
