package kube

import (
	"context"
	"net/http"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Client is the part of the Kubernetes API wsplan uses: seven calls on
// core/v1 and batch/v1 objects. NewClient makes one over client-go's
// generic REST client. Errors are the API's: apierrors.IsNotFound and the
// like tell them apart.
type Client interface {
	// CreateJob creates the Job in its namespace and returns it as stored
	// (with its UID, for owner references).
	CreateJob(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
	CreateSecret(ctx context.Context, secret *corev1.Secret) error
	CreateService(ctx context.Context, svc *corev1.Service) error
	GetJob(ctx context.Context, ns, name string) (*batchv1.Job, error)
	// ListPods lists the namespace's pods matching a label selector
	// ("key=value").
	ListPods(ctx context.Context, ns, labelSelector string) ([]corev1.Pod, error)
	// ListEvents lists the namespace's events matching a field selector
	// ("involvedObject.name=NAME").
	ListEvents(ctx context.Context, ns, fieldSelector string) ([]corev1.Event, error)
	// Delete deletes an object, its dependents in the background.
	Delete(ctx context.Context, r Resource, ns, name string) error
}

// Resource is a kind of object Client.Delete deletes, by its name in the
// API's paths.
type Resource string

// The resources wsplan creates.
const (
	Jobs     Resource = "jobs"
	Services Resource = "services"
	Secrets  Resource = "secrets"
)

// scheme knows only the types wsplan sends and receives: core/v1,
// batch/v1 and the meta/v1 options and Status. client-go's own
// (k8s.io/client-go/kubernetes/scheme), which its typed clients use,
// links every API group of Kubernetes.
var (
	scheme = newScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, batchv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // the types are k8s.io/api's own: cannot fail
		}
	}
	return s
}

// restClient is a Client over one REST client per API group: /api/v1
// (core) and /apis/batch/v1, sharing one HTTP client.
type restClient struct {
	core, batch *rest.RESTClient
}

// NewClient connects to the cluster cfg describes (a kubeconfig's or the
// in-cluster config, with its authentication: certificates, tokens, auth
// and exec plugins).
func NewClient(cfg *rest.Config) (Client, error) {
	base := rest.CopyConfig(cfg)
	if base.UserAgent == "" {
		base.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	core, err := groupClient(base, hc, corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := groupClient(base, hc, batchv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &restClient{core: core, batch: batch}, nil
}

// groupClient is the REST client of one API group version, as client-go's
// typed clients configure theirs (JSON; the API server's defaults).
func groupClient(base *rest.Config, hc *http.Client, gv schema.GroupVersion, apiPath string) (*rest.RESTClient, error) {
	cfg := rest.CopyConfig(base)
	cfg.GroupVersion = &gv
	cfg.APIPath = apiPath
	cfg.NegotiatedSerializer = codecs.WithoutConversion()
	return rest.RESTClientForConfigAndClient(cfg, hc)
}

func (c *restClient) CreateJob(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	err := c.batch.Post().Namespace(job.Namespace).Resource(string(Jobs)).Body(job).Do(ctx).Into(out)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c *restClient) CreateSecret(ctx context.Context, secret *corev1.Secret) error {
	return c.core.Post().Namespace(secret.Namespace).Resource(string(Secrets)).Body(secret).Do(ctx).Error()
}

func (c *restClient) CreateService(ctx context.Context, svc *corev1.Service) error {
	return c.core.Post().Namespace(svc.Namespace).Resource(string(Services)).Body(svc).Do(ctx).Error()
}

func (c *restClient) GetJob(ctx context.Context, ns, name string) (*batchv1.Job, error) {
	out := &batchv1.Job{}
	if err := c.batch.Get().Namespace(ns).Resource(string(Jobs)).Name(name).Do(ctx).Into(out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *restClient) ListPods(ctx context.Context, ns, labelSelector string) ([]corev1.Pod, error) {
	var out corev1.PodList
	if err := c.core.Get().Namespace(ns).Resource("pods").Param("labelSelector", labelSelector).Do(ctx).Into(&out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

func (c *restClient) ListEvents(ctx context.Context, ns, fieldSelector string) ([]corev1.Event, error) {
	var out corev1.EventList
	if err := c.core.Get().Namespace(ns).Resource("events").Param("fieldSelector", fieldSelector).Do(ctx).Into(&out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

func (c *restClient) Delete(ctx context.Context, r Resource, ns, name string) error {
	rc := c.core
	if r == Jobs {
		rc = c.batch
	}
	bg := metav1.DeletePropagationBackground
	return rc.Delete().Namespace(ns).Resource(string(r)).Name(name).
		Body(&metav1.DeleteOptions{PropagationPolicy: &bg}).Do(ctx).Error()
}
