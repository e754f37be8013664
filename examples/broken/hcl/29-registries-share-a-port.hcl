# Mistake: members "pool-a" and "pool-b" run on the same host (node-b)
# and their two different registries both listen on port 5051.
# poolc reports the host, the port and both registries.
pool "lab" {
  pod_pool "harness" {
    image = "lab-harness"

    member "pool-a" {
      ssh_host = "node-b"
      registry = "k3d-registry-a:5051"
    }
    member "pool-b" {
      ssh_host = "node-b"
      registry = "k3d-registry-b:5051"
    }
  }
}
