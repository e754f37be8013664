package launch

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// ParseJob reads a Job manifest (YAML or JSON, one document), as kubectl
// would accept it: apiVersion batch/v1, kind Job, no unknown fields.
func ParseJob(doc []byte) (*batchv1.Job, error) {
	var j batchv1.Job
	if err := yaml.UnmarshalStrict(doc, &j); err != nil {
		return nil, fmt.Errorf("job manifest: %w", err)
	}
	if j.APIVersion != "batch/v1" || j.Kind != "Job" {
		return nil, fmt.Errorf("job manifest: apiVersion %q kind %q, want batch/v1 Job", j.APIVersion, j.Kind)
	}
	if len(j.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("job manifest: spec.template.spec.containers is empty")
	}
	if j.Spec.Template.Spec.RestartPolicy == "" {
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	return &j, nil
}

// CommandJob is a Job of one container running command (with its
// arguments) in image, restarted never.
func CommandJob(image string, command []string) *batchv1.Job {
	return &batchv1.Job{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "job", Image: image, Command: command}},
		}}},
	}
}
