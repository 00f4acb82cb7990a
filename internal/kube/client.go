package kube

import (
	"context"
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Client is the part of the Kubernetes API wsplan uses: seven calls on
// core/v1 and batch/v1 objects (objects.go's types). NewClient makes one
// over client-go's generic REST client. Errors are the API's:
// apierrors.IsNotFound and the like tell them apart.
type Client interface {
	// CreateJob creates the Job in its namespace and returns it as stored
	// (with its UID, for owner references).
	CreateJob(ctx context.Context, job *Job) (*Job, error)
	CreateSecret(ctx context.Context, secret *Secret) error
	CreateService(ctx context.Context, svc *Service) error
	GetJob(ctx context.Context, ns, name string) (*Job, error)
	// ListPods lists the namespace's pods matching a label selector
	// ("key=value").
	ListPods(ctx context.Context, ns, labelSelector string) ([]Pod, error)
	// ListEvents lists the namespace's events matching a field selector
	// ("involvedObject.name=NAME").
	ListEvents(ctx context.Context, ns, fieldSelector string) ([]Event, error)
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

// scheme knows only meta/v1's types: the DeleteOptions wsplan sends and the
// Status of the API's errors, which the REST client decodes into
// apierrors' StatusError (apierrors.IsNotFound and the like). Objects go
// as JSON bytes and come back as bytes, decoded with encoding/json into
// objects.go's types: no API group's types are registered or linked.
var (
	scheme = newScheme()
	codecs = serializer.NewCodecFactory(scheme)
)

func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, coreV1)
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
	core, err := groupClient(base, hc, coreV1, "/api")
	if err != nil {
		return nil, err
	}
	batch, err := groupClient(base, hc, batchV1, "/apis")
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

func (c *restClient) CreateJob(ctx context.Context, job *Job) (*Job, error) {
	out := &Job{}
	if err := create(ctx, c.batch, Jobs, job.Namespace, job, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *restClient) CreateSecret(ctx context.Context, secret *Secret) error {
	return create(ctx, c.core, Secrets, secret.Namespace, secret, nil)
}

func (c *restClient) CreateService(ctx context.Context, svc *Service) error {
	return create(ctx, c.core, Services, svc.Namespace, svc, nil)
}

func (c *restClient) GetJob(ctx context.Context, ns, name string) (*Job, error) {
	out := &Job{}
	if err := decode(c.batch.Get().Namespace(ns).Resource(string(Jobs)).Name(name).Do(ctx), out); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *restClient) ListPods(ctx context.Context, ns, labelSelector string) ([]Pod, error) {
	var out PodList
	if err := decode(c.core.Get().Namespace(ns).Resource("pods").Param("labelSelector", labelSelector).Do(ctx), &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

func (c *restClient) ListEvents(ctx context.Context, ns, fieldSelector string) ([]Event, error) {
	var out EventList
	if err := decode(c.core.Get().Namespace(ns).Resource("events").Param("fieldSelector", fieldSelector).Do(ctx), &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// create POSTs obj (with its apiVersion and kind) as JSON to the
// namespace's collection of r and decodes the stored object into out,
// unless out is nil.
func create(ctx context.Context, rc *rest.RESTClient, r Resource, ns string, obj, out any) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	res := rc.Post().Namespace(ns).Resource(string(r)).SetHeader("Content-Type", "application/json").Body(body).Do(ctx)
	if out == nil {
		return res.Error()
	}
	return decode(res, out)
}

// decode decodes a response's JSON body into out, or returns its error
// (an apierrors.StatusError when the API said why).
func decode(res rest.Result, out any) error {
	body, err := res.Raw()
	if err != nil {
		return err
	}
	return json.Unmarshal(body, out)
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
