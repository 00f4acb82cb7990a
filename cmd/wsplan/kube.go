package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wsplan/wsplan/internal/kube"
	"github.com/wsplan/wsplan/internal/plan"
	"github.com/wsplan/wsplan/internal/result"
	"github.com/wsplan/wsplan/internal/shard"
)

// DefaultImage is the shard image when client.kubernetes.image is not set:
// this version of wsplan, built from the repository's Dockerfile.
const DefaultImage = "ghcr.io/wsplan/wsplan"

func defaultImage() string {
	v := result.NewProvenance(nil).Version
	if v == "" || strings.HasPrefix(v, "(") {
		v = "latest"
	}
	return DefaultImage + ":" + v
}

// kubeSpec is the kube.Spec of a plan's client.kubernetes (its defaults
// when the plan has none), with the run's certificates.
func kubeSpec(k *plan.Kube, c plan.Client, runID string, certs map[string][]byte) kube.Spec {
	if k == nil {
		k = plan.DefaultKube()
	}
	image := k.Image
	if image == "" {
		image = defaultImage()
	}
	return kube.Spec{RunID: runID, Namespace: k.Namespace, Image: image, Shards: k.Shards, Port: k.Port,
		NodeSelector: k.NodeSelector, CPU: k.CPU, Memory: k.Memory, Spread: *k.Spread, IdleExit: c.IdleExit.D(),
		ActiveDeadline: k.ActiveDeadline.D(), TTL: k.TTL.D(), Certs: certs}
}

func newKubeCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kube",
		Short: "Remote client shards on Kubernetes (see client.kubernetes in a plan)",
	}
	var (
		f      planFlags
		certs  string
		runID  string
		shards int
	)
	manifest := &cobra.Command{
		Use:   "manifest PLAN",
		Short: "Print the Secret, headless Service and Indexed Job of the plan's shards as YAML, for kubectl apply",
		Long: "Print the Kubernetes objects `wsplan run` would create for the plan's client.kubernetes (its\n" +
			"defaults when the plan has none). The run's certificates are written to --certs: run the plan\n" +
			"with client.remote set to the printed pod addresses and client.certs to that directory.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkManifestFlags(cmd, runID, certs, shards); err != nil {
				return err
			}
			p, err := f.load(args[0])
			if err != nil {
				return err
			}
			if runID == "" {
				runID = kube.NewRunID()
			}
			if certs == "" {
				certs = "wsplan-certs-" + runID
			}
			if err := touchHost("write " + certs); err != nil {
				return err
			}
			files, err := shard.NewCerts(certs)
			if err != nil {
				return err
			}
			s := kubeSpec(p.Client.Kubernetes, p.Client, runID, files)
			if shards > 0 {
				s.Shards = shards
			}
			b, err := kube.Manifest(s)
			if err != nil {
				return usageErr(err)
			}
			var remote []string
			for i := range s.Shards {
				remote = append(remote, fmt.Sprintf("wsplan-%s-%d.wsplan-%s.%s.svc:%d", runID, i, runID, s.Namespace, s.Port))
			}
			fmt.Fprintf(stdout, "# wsplan shards for plan %s (run %s): kubectl apply -f this, then run the plan with\n#   client: {remote: [%s], certs: %s}\n# from inside the cluster. The Job ends after %s (activeDeadlineSeconds); delete with\n#   kubectl -n %s delete job,service,secret -l %s=%s\n",
				p.Name, runID, strings.Join(remote, ", "), certs, s.ActiveDeadline, s.Namespace, kube.LabelRun, runID)
			_, err = stdout.Write(b)
			return err
		},
	}
	f.register(manifest)
	manifest.Flags().StringVar(&certs, "certs", "", "directory for the run's certificates; default wsplan-certs-RUNID")
	manifest.Flags().StringVar(&runID, "run-id", "", "the run id in names and labels; default random")
	manifest.Flags().IntVar(&shards, "shards", 0, "shard pods; default the plan's kubernetes.shards (2)")
	cmd.AddCommand(manifest)
	return cmd
}

// checkManifestFlags checks kube manifest's own flags before the plan
// loads and the certificates are written.
func checkManifestFlags(cmd *cobra.Command, runID, certs string, shards int) error {
	if cmd.Flags().Changed("shards") && shards < 1 {
		return usageErr(fmt.Errorf("--shards %d: want >= 1 (leave it out for the plan's kubernetes.shards)", shards))
	}
	if cmd.Flags().Changed("run-id") {
		if err := kube.CheckRunID(runID); err != nil {
			return usageErr(fmt.Errorf("--run-id: %w", err))
		}
	}
	if st, err := os.Stat(certs); certs != "" && err == nil && !st.IsDir() {
		return usageErr(fmt.Errorf("--certs %s: not a directory", certs))
	}
	return nil
}

// kubeUp deploys the plan's client.kubernetes shards before preflight and
// points client.remote at them; the returned func deletes them (call it
// when the run ends, also on SIGINT). A plan without client.kubernetes
// gets a no-op.
func kubeUp(parent context.Context, p *plan.Plan, stderr io.Writer) (func(), error) {
	k := p.Client.Kubernetes
	if k == nil {
		return func() {}, nil
	}
	if err := touchHost("kubernetes"); err != nil {
		return nil, err
	}
	cfg, err := restConfig(k.Kubeconfig)
	if err != nil {
		return nil, usageErr(fmt.Errorf("%s:%d: client.kubernetes: %w", p.File, k.Line, err))
	}
	cs, err := kube.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "wsplan-certs-")
	if err != nil {
		return nil, err
	}
	runID := kube.NewRunID()
	files, err := shard.NewCerts(filepath.Join(dir, "certs"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := kubeSpec(k, p.Client, runID, files)
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "kubernetes: creating job %s/wsplan-%s: %d shard pods of %s\n", s.Namespace, runID, s.Shards, s.Image)
	d, addrs, err := kube.Deploy(ctx, cs, s, k.ReadyTimeout.D())
	if err != nil {
		os.RemoveAll(dir)
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, usageErr(err)
	}
	fmt.Fprintf(stderr, "kubernetes: shards ready at %s\n", strings.Join(addrs, ", "))
	p.Client.Remote, p.Client.Certs = addrs, filepath.Join(dir, "certs")
	return func() {
		if err := d.Delete(); err != nil {
			fmt.Fprintf(stderr, "kubernetes: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "kubernetes: deleted job, service and secret %s/wsplan-%s\n", s.Namespace, runID)
		}
		// The certificates die with the run; a failure leaves a temp dir.
		_ = os.RemoveAll(dir)
	}, nil
}

// restConfig is the cluster to talk to: the kubeconfig file when given,
// else in-cluster, else $KUBECONFIG or ~/.kube/config.
func restConfig(path string) (*rest.Config, error) {
	if path == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
}
