# Mistake: member "pool-a" names its registry "lab-registry:5051"; k3d
# registries are named k3d-NAME.
# poolc reports that the registry name must start with "k3d-".
pool "lab" {
  pod_pool "harness" {
    image   = "lab-harness"
    members = "pool-a@node-a:4#lab-registry:5051"
  }
}
