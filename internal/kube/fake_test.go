package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// fakeAPI is a Kubernetes API server for the tests, over HTTP: create,
// get, list and delete of the objects Deploy uses (Jobs in batch/v1;
// Secrets, Services, Pods and Events in core/v1), labelSelector and
// fieldSelector on lists, errors as Status objects, a bearer token when
// token is set. Deploy reaches it through NewClient, so the tests run the
// real REST client; the fake kubelet and the tests' checks use its store
// (get, put, list) directly, as the cluster's own components would. It
// stores objects.go's types: a create must be JSON that decodes strictly
// into them (kubeapi_test.go checks them against k8s.io/api's).
type fakeAPI struct {
	*httptest.Server
	token string // when set, requests without "Authorization: Bearer token" get 401

	mu      sync.Mutex
	objs    map[string]object // "resource/namespace/name" → object
	rv      int               // the last resourceVersion
	deletes []string          // "resource/namespace/name propagationPolicy" of each DELETE
}

// object is a stored API object: a pointer to one of objects.go's types
// (their ObjectMeta and TypeMeta give the methods).
type object interface {
	metav1.Object
	GetObjectKind() schema.ObjectKind
}

// fakeResource is a resource the fake serves.
type fakeResource struct {
	gv     schema.GroupVersion
	kind   string
	new    func() object
	fields func(object) fields.Set // field selector labels besides metadata.name and .namespace
}

var fakeResources = map[string]fakeResource{
	"jobs":     {gv: batchV1, kind: "Job", new: func() object { return &Job{} }},
	"secrets":  {gv: coreV1, kind: "Secret", new: func() object { return &Secret{} }},
	"services": {gv: coreV1, kind: "Service", new: func() object { return &Service{} }},
	"pods": {gv: coreV1, kind: "Pod", new: func() object { return &Pod{} },
		fields: func(o object) fields.Set {
			return fields.Set{"status.phase": string(o.(*Pod).Status.Phase)}
		}},
	"events": {gv: coreV1, kind: "Event", new: func() object { return &Event{} },
		fields: func(o object) fields.Set {
			e := o.(*Event)
			return fields.Set{"involvedObject.kind": e.InvolvedObject.Kind, "involvedObject.name": e.InvolvedObject.Name,
				"involvedObject.namespace": e.InvolvedObject.Namespace, "reason": e.Reason}
		}},
}

// newFakeAPI starts an empty cluster's API server, stopped when t ends.
func newFakeAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{objs: map[string]object{}}
	mux := http.NewServeMux()
	for _, prefix := range []string{"/api/v1", "/apis/batch/v1"} {
		mux.HandleFunc(prefix+"/namespaces/{ns}/{res}", f.serve)
		mux.HandleFunc(prefix+"/namespaces/{ns}/{res}/{name}", f.serve)
	}
	f.Server = httptest.NewServer(mux)
	t.Cleanup(f.Close)
	return f
}

// client is a Client of the fake, made by NewClient.
func (f *fakeAPI) client(t *testing.T) Client {
	t.Helper()
	cs, err := NewClient(&rest.Config{Host: f.URL, BearerToken: f.token})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func key(res, ns, name string) string { return res + "/" + ns + "/" + name }

// get returns a copy of the stored object, or false.
func (f *fakeAPI) get(res, ns, name string) (object, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objs[key(res, ns, name)]
	if !ok {
		return nil, false
	}
	return copyOf(res, o), true
}

// copyOf is a deep copy of o, a stored object of res: through its JSON, as
// the server would send it.
func copyOf(res string, o object) object {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err) // the API types encode
	}
	c := fakeResources[res].new()
	if err := json.Unmarshal(b, c); err != nil {
		panic(err)
	}
	return c
}

// put stores a copy of o (created or replaced) with a new resourceVersion.
func (f *fakeAPI) put(res string, o object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.store(res, o)
}

func (f *fakeAPI) store(res string, o object) {
	f.rv++
	o = copyOf(res, o)
	o.SetResourceVersion(strconv.Itoa(f.rv))
	f.objs[key(res, o.GetNamespace(), o.GetName())] = o
}

// list returns copies of the namespace's objects (all namespaces' for ""),
// by name.
func (f *fakeAPI) list(res, ns string) []object {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []object
	for k, o := range f.objs {
		if strings.HasPrefix(k, res+"/") && (ns == "" || o.GetNamespace() == ns) {
			out = append(out, copyOf(res, o))
		}
	}
	slices.SortFunc(out, func(a, b object) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out
}

// deleted returns the DELETEs so far.
func (f *fakeAPI) deleted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.deletes)
}

// serve answers one request on a namespace's collection or object.
func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	res, ns, name := r.PathValue("res"), r.PathValue("ns"), r.PathValue("name")
	kind, ok := fakeResources[res]
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		f.fail(w, apierrors.NewUnauthorized("bad token"))
		return
	}
	if !ok || !strings.HasPrefix(r.URL.Path, apiPrefix(kind.gv)+"/") {
		f.fail(w, apierrors.NewNotFound(schema.GroupResource{Resource: res}, ""))
		return
	}
	switch {
	case name == "" && r.Method == http.MethodPost:
		f.create(w, r, res, kind, ns)
	case name == "" && r.Method == http.MethodGet:
		f.listHTTP(w, r, res, kind, ns)
	case name != "" && r.Method == http.MethodGet:
		o, ok := f.get(res, ns, name)
		if !ok {
			f.fail(w, apierrors.NewNotFound(kind.gv.WithResource(res).GroupResource(), name))
			return
		}
		f.write(w, http.StatusOK, kind, o)
	case name != "" && r.Method == http.MethodDelete:
		f.delete(w, r, res, kind, ns, name)
	default:
		f.fail(w, apierrors.NewMethodNotSupported(kind.gv.WithResource(res).GroupResource(), r.Method))
	}
}

func apiPrefix(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.String()
}

// create stores the request's object as a real server does: of the
// resource's kind, in the path's namespace, under a new name.
func (f *fakeAPI) create(w http.ResponseWriter, r *http.Request, res string, kind fakeResource, ns string) {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.fail(w, apierrors.NewBadRequest(fmt.Sprintf("content type %q, want application/json", ct)))
		return
	}
	o := kind.new()
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(o); err != nil {
		f.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	gr := kind.gv.WithResource(res).GroupResource()
	if gvk := o.GetObjectKind().GroupVersionKind(); gvk != kind.gv.WithKind(kind.kind) {
		f.fail(w, apierrors.NewBadRequest(fmt.Sprintf("%s sent to %s", gvk, r.URL.Path)))
		return
	}
	if o.GetNamespace() != ns || o.GetName() == "" {
		f.fail(w, apierrors.NewBadRequest(fmt.Sprintf("object %s/%s sent to namespace %s", o.GetNamespace(), o.GetName(), ns)))
		return
	}
	f.mu.Lock()
	if _, ok := f.objs[key(res, ns, o.GetName())]; ok {
		f.mu.Unlock()
		f.fail(w, apierrors.NewAlreadyExists(gr, o.GetName()))
		return
	}
	o.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", o.GetName(), f.rv+1)))
	o.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	f.store(res, o)
	o = copyOf(res, f.objs[key(res, ns, o.GetName())])
	f.mu.Unlock()
	f.write(w, http.StatusCreated, kind, o)
}

// listHTTP answers a list with the objects matching its selectors; a
// field the resource has no selector for is a bad request, as on a real
// server.
func (f *fakeAPI) listHTTP(w http.ResponseWriter, r *http.Request, res string, kind fakeResource, ns string) {
	q := r.URL.Query()
	lsel, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		f.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	fsel, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		f.fail(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	known := kind.fieldSet(kind.new())
	for _, req := range fsel.Requirements() {
		if !known.Has(req.Field) {
			f.fail(w, apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field)))
			return
		}
	}
	items := []object{}
	for _, o := range f.list(res, ns) {
		if lsel.Matches(labels.Set(o.GetLabels())) && fsel.Matches(kind.fieldSet(o)) {
			items = append(items, o)
		}
	}
	f.mu.Lock()
	rv := strconv.Itoa(f.rv)
	f.mu.Unlock()
	f.writeJSON(w, http.StatusOK, map[string]any{
		"apiVersion": kind.gv.String(), "kind": kind.kind + "List",
		"metadata": metav1.ListMeta{ResourceVersion: rv}, "items": items,
	})
}

func (k fakeResource) fieldSet(o object) fields.Set {
	set := fields.Set{"metadata.name": o.GetName(), "metadata.namespace": o.GetNamespace()}
	if k.fields != nil {
		for f, v := range k.fields(o) {
			set[f] = v
		}
	}
	return set
}

// delete removes the object and records the request's propagation policy.
func (f *fakeAPI) delete(w http.ResponseWriter, r *http.Request, res string, kind fakeResource, ns, name string) {
	var opts metav1.DeleteOptions
	if err := json.NewDecoder(r.Body).Decode(&opts); err != nil && !errors.Is(err, io.EOF) {
		f.fail(w, apierrors.NewBadRequest("delete options: "+err.Error()))
		return
	}
	policy := "<none>"
	if opts.PropagationPolicy != nil {
		policy = string(*opts.PropagationPolicy)
	}
	f.mu.Lock()
	f.deletes = append(f.deletes, key(res, ns, name)+" "+policy)
	_, ok := f.objs[key(res, ns, name)]
	delete(f.objs, key(res, ns, name))
	f.mu.Unlock()
	if !ok {
		f.fail(w, apierrors.NewNotFound(kind.gv.WithResource(res).GroupResource(), name))
		return
	}
	f.writeJSON(w, http.StatusOK, metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusSuccess})
}

// write sends o with its apiVersion and kind.
func (f *fakeAPI) write(w http.ResponseWriter, code int, kind fakeResource, o object) {
	o.GetObjectKind().SetGroupVersionKind(kind.gv.WithKind(kind.kind))
	f.writeJSON(w, code, o)
}

// fail sends the error's Status.
func (f *fakeAPI) fail(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	f.writeJSON(w, int(st.Code), st)
}

func (f *fakeAPI) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		panic(err) // the API types encode
	}
}
