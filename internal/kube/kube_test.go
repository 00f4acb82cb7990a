package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wsplan/wsplan/internal/testenv"
	"github.com/wsplan/wsplan/scenarios/echo"

	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/wsplan/wsplan/internal/client"
	"github.com/wsplan/wsplan/internal/shard"
	"github.com/wsplan/wsplan/internal/testserver"
	"github.com/wsplan/wsplan/internal/units"
)

func TestMain(m *testing.M) {
	PollInterval = 20 * time.Millisecond
	goleak.VerifyTestMain(m)
}

// kubelet plays the cluster behind the fake API (fakeAPI): it creates the
// pods of every Job and moves them as mode says. "ready": each pod i runs a real
// shard.Listen on 127.0.0.(2+i) with the Secret's certificates, then is
// Ready; "unschedulable", "imagepull": the pod's status says so;
// "pending": nothing happens.
type kubelet struct {
	t      *testing.T
	api    *fakeAPI
	mode   string
	port   int
	stop   chan struct{}
	wg     sync.WaitGroup
	cancel context.CancelFunc
	ctx    context.Context
	mu     sync.Mutex
	shards map[string]chan error // pod name → its Listen's end
}

func startKubelet(t *testing.T, api *fakeAPI, mode string, port int) *kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{t: t, api: api, mode: mode, port: port, stop: make(chan struct{}), ctx: ctx, cancel: cancel, shards: map[string]chan error{}}
	k.wg.Add(1)
	go k.loop()
	t.Cleanup(k.close)
	return k
}

func (k *kubelet) close() {
	select {
	case <-k.stop:
		return
	default:
	}
	close(k.stop)
	k.cancel()
	k.wg.Wait()
}

func (k *kubelet) loop() {
	defer k.wg.Done()
	for {
		select {
		case <-k.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		for _, j := range k.api.list("jobs", "") {
			k.pods(*j.(*Job))
		}
	}
}

func (k *kubelet) pods(j Job) {
	for i := range int(*j.Spec.Completions) {
		name := fmt.Sprintf("%s-%d-x", j.Name, i)
		var p *Pod
		if o, ok := k.api.get("pods", j.Namespace, name); ok {
			p = o.(*Pod)
		} else {
			p = &Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: j.Namespace, Labels: j.Spec.Template.Labels,
				Annotations: map[string]string{JobCompletionIndexAnnotation: strconv.Itoa(i)}}}
			p.Status.Phase = PodPending
			k.api.put("pods", p)
		}
		switch k.mode {
		case "unschedulable":
			p.Status.Conditions = []PodCondition{{Type: PodScheduled, Status: ConditionFalse,
				Reason: PodReasonUnschedulable, Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."}}
		case "imagepull":
			p.Status.ContainerStatuses = []ContainerStatus{{Name: "shard", State: ContainerState{
				Waiting: &ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nope:latest"`}}}}
		case "ready":
			if podReady(*p) {
				continue
			}
			if !k.startShard(j, i, name) {
				continue // the Secret is not there yet, as a real pod waits for its volume
			}
			p.Status.Phase = PodRunning
			p.Status.PodIP = fmt.Sprintf("127.0.0.%d", 2+i)
			p.Status.Conditions = []PodCondition{{Type: PodReady, Status: ConditionTrue}}
		default:
			continue
		}
		k.api.put("pods", p)
	}
}

// startShard runs pod i's container: `wsplan shard --listen` with the
// mounted Secret.
func (k *kubelet) startShard(j Job, i int, name string) bool {
	o, ok := k.api.get("secrets", j.Namespace, j.Spec.Template.Spec.Volumes[0].Secret.SecretName)
	if !ok {
		return false
	}
	sec := o.(*Secret)
	dir := k.t.TempDir()
	for f, b := range sec.Data {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			k.t.Error(err)
			return false
		}
	}
	cfg, err := shard.ShardTLS(dir)
	if err != nil {
		k.t.Error(err)
		return false
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", 2+i, k.port))
	if err != nil {
		k.t.Error(err)
		return false
	}
	done := make(chan error, 1)
	k.mu.Lock()
	k.shards[name] = done
	k.mu.Unlock()
	go func() {
		done <- shard.Listen(k.ctx, shard.ListenSpec{Listener: ln, TLS: cfg, IdleExit: time.Minute, Loops: 1})
	}()
	return true
}

// shardsEnded waits for every shard's Listen to return and returns their
// results.
func (k *kubelet) shardsEnded(t *testing.T, within time.Duration) []error {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []error
	for name, ch := range k.shards {
		select {
		case err := <-ch:
			out = append(out, err)
		case <-time.After(within):
			t.Errorf("shard %s still running %s after its orchestrator left", name, within)
		}
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		ls := []net.Listener{}
		ok := true
		var port int
		for i := range 2 {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", 2+i, port))
			if err != nil {
				ok = false
				break
			}
			port = l.Addr().(*net.TCPAddr).Port
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Close()
		}
		if ok {
			return port
		}
	}
	t.Fatal("no free port on 127.0.0.2 and .3")
	return 0
}

func testSpec(t *testing.T, port int) Spec {
	t.Helper()
	certs, err := shard.NewCerts(filepath.Join(t.TempDir(), "certs"))
	if err != nil {
		t.Fatal(err)
	}
	return Spec{RunID: NewRunID(), Namespace: "bench", Image: "ghcr.io/wsplan/wsplan:test", Shards: 2, Port: port,
		Spread: true, IdleExit: 500 * time.Millisecond, ActiveDeadline: time.Hour, TTL: 10 * time.Minute, Certs: certs}
}

// assertGone checks that the run's Job, Service and Secret are deleted,
// each by one DELETE with background propagation (the Job's pods go with
// it).
func assertGone(t *testing.T, api *fakeAPI, s Spec) {
	t.Helper()
	for _, res := range []string{"jobs", "services", "secrets"} {
		if _, ok := api.get(res, s.Namespace, s.name()); ok {
			t.Errorf("%s left behind", res)
		}
	}
	var want []string
	for _, res := range []string{"jobs", "services", "secrets"} {
		want = append(want, res+"/"+s.Namespace+"/"+s.name()+" Background")
	}
	if got := api.deleted(); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("deletes %q, want %q", got, want)
	}
}

func echoServer(t *testing.T) string {
	t.Helper()
	return testserver.Start(t, testserver.Options{}).Addr()
}

// run deploys, runs connect + echo on the shards (until ctx ends for the
// echo when long is set) and returns the echo's error.
func runOn(t *testing.T, ctx context.Context, addrs []string, dir string, long bool) error {
	t.Helper()
	cfg, err := shard.OrchestratorTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := shard.Dial(ctx, shard.RemoteSpec{Addrs: addrs, TLS: cfg, IdleExit: 300 * time.Millisecond,
		Client: client.Options{Targets: []string{echoServer(t)}, Path: "/ws", Loops: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.Run(ctx, &client.ConnectParams{Connections: 20, Concurrency: 10, Timeout: units.Duration(5 * time.Second)}, nil); err != nil {
		t.Fatal(err)
	}
	total := int64(200)
	if long {
		total = 1 << 40
	}
	res, err := g.Run(ctx, &echo.Params{Total: total, Concurrency: 20, Payload: new(units.Size(16)), Timeout: units.Duration(5 * time.Second)}, nil)
	if !long && (err != nil || res.(*echo.Result).Success != 200) {
		t.Errorf("echo on the pods: %+v, %v", res, err)
	}
	return err
}

// TestDeployRunDelete: create → ready → run → delete, against the fake
// API server (fakeAPI) with real shards behind the pods.
func TestDeployRunDelete(t *testing.T) {
	api := newFakeAPI(t)
	s := testSpec(t, freePort(t))
	dir := t.TempDir()
	for f, b := range s.Certs {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k := startKubelet(t, api, "ready", s.Port)
	d, addrs, err := Deploy(t.Context(), api.client(t), s, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("127.0.0.2:%d", s.Port), fmt.Sprintf("127.0.0.3:%d", s.Port)}
	if strings.Join(addrs, ",") != strings.Join(want, ",") {
		t.Errorf("addresses %v, want %v", addrs, want)
	}
	// The Secret carries the shard's certificates, not the orchestrator's key.
	o, ok := api.get("secrets", "bench", s.name())
	if !ok {
		t.Fatal("no secret")
	}
	sec := o.(*Secret)
	if _, ok := sec.Data[shard.OrchKeyFile]; ok || len(sec.Data) != 3 {
		t.Errorf("secret holds %d files (orchestrator key: %v), want ca.pem, shard.pem, shard.key", len(sec.Data), ok)
	}
	job, ok := api.get("jobs", "bench", s.name())
	if !ok {
		t.Fatal("no job")
	}
	if own := sec.OwnerReferences; len(own) != 1 || own[0].Kind != "Job" || own[0].Name != s.name() || own[0].UID == "" || own[0].UID != job.GetUID() {
		t.Errorf("secret owners %v, want the job %s (its TTL deletes the secret)", own, job.GetUID())
	}
	if err := runOn(t, t.Context(), addrs, dir, false); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, api, s)
	k.close()
	k.shardsEnded(t, 5*time.Second)
}

// TestDeployFailures: a pod that cannot be scheduled or pull its image,
// a quota refusing the pods, a timeout and SIGINT while waiting each fail
// Deploy with a clear error, and nothing is left in the cluster.
func TestDeployFailures(t *testing.T) {
	testenv.Slow(t, "2 s: deployment failures waited out against a fake API server")
	for _, tc := range []struct {
		mode, want string
		timeout    time.Duration
		cancel     bool
		quota      bool
	}{
		{mode: "unschedulable", want: "unschedulable: 0/3 nodes are available", timeout: 10 * time.Second},
		{mode: "imagepull", want: `image pull: ImagePullBackOff: Back-off pulling image "nope:latest"`, timeout: 10 * time.Second},
		{mode: "none", want: "cannot create its pods: pods \"x\" is forbidden: exceeded quota", timeout: 10 * time.Second, quota: true},
		{mode: "pending", want: "not ready after 300ms: 2 of 2 pods created, 0 ready", timeout: 300 * time.Millisecond},
		{mode: "pending", want: "context canceled", timeout: 10 * time.Second, cancel: true},
	} {
		t.Run(tc.want, func(t *testing.T) {
			api := newFakeAPI(t)
			s := testSpec(t, 7070)
			startKubelet(t, api, tc.mode, s.Port)
			if tc.quota {
				api.put("events", &Event{
					ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: "bench"},
					InvolvedObject: ObjectReference{Kind: "Job", Name: s.name(), Namespace: "bench"},
					Reason:         "FailedCreate", Message: `pods "x" is forbidden: exceeded quota: q, requested: cpu=2, used: cpu=8, limited: cpu=8`,
				})
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(200*time.Millisecond, cancel) // SIGINT
			}
			d, _, err := Deploy(ctx, api.client(t), s, tc.timeout)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Deploy: %v, want %q", err, tc.want)
			}
			if tc.cancel && !errors.Is(err, context.Canceled) {
				t.Errorf("interrupted Deploy: %v, want context.Canceled", err)
			}
			if d != nil {
				t.Error("a failed Deploy returned a deployment")
			}
			assertGone(t, api, s)
		})
	}
}

// TestSIGINTMidRun: SIGINT during a phase (the run's context ends): the
// phase stops, the orchestrator deletes the objects, and the shards,
// their link gone, close their connections and exit after idle_exit.
func TestSIGINTMidRun(t *testing.T) {
	api := newFakeAPI(t)
	s := testSpec(t, freePort(t))
	dir := t.TempDir()
	for f, b := range s.Certs {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	k := startKubelet(t, api, "ready", s.Port)
	d, addrs, err := Deploy(t.Context(), api.client(t), s, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(500*time.Millisecond, cancel) // SIGINT
	if err := runOn(t, ctx, addrs, dir, true); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted echo: %v, want context.Canceled", err)
	}
	if err := d.Delete(); err != nil {
		t.Fatal(err)
	}
	assertGone(t, api, s)
	// The shards' idle_exit is the orchestrator's (300ms): they exit on their own.
	for _, err := range k.shardsEnded(t, 5*time.Second) {
		if !errors.Is(err, shard.ErrIdle) {
			t.Errorf("shard ended with %v, want ErrIdle after idle_exit", err)
		}
	}
}
