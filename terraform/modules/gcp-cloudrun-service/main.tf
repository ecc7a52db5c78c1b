# The sluice container on Cloud Run: scales to zero, long polls share an
# instance, secrets come from Secret Manager, probes use sluice's own
# health paths.

locals {
  # Queue URLs take the https scheme Cloud Run's front end saw
  # (X-Forwarded-Proto): the service's own URL cannot be in its own
  # configuration without a cycle.
  env = merge({ SLUICE_TRUST_FORWARDED = "true" }, var.env)
}

resource "google_cloud_run_v2_service" "this" {
  project             = var.project_id
  location            = var.region
  name                = var.name
  ingress             = "INGRESS_TRAFFIC_ALL"
  deletion_protection = var.deletion_protection
  labels              = var.labels

  template {
    service_account                  = var.service_account_email
    max_instance_request_concurrency = var.concurrency
    timeout                          = "${var.timeout_seconds}s"

    scaling {
      min_instance_count = var.min_instances
      max_instance_count = var.max_instances
    }

    containers {
      image = var.image

      ports {
        container_port = 8080
      }

      resources {
        limits = {
          cpu    = var.cpu
          memory = var.memory
        }
        # CPU only during requests: nothing acknowledged waits for work
        # after a response, and the scheduler runs the maintenance pass.
        cpu_idle          = true
        startup_cpu_boost = true
      }

      dynamic "env" {
        for_each = local.env
        content {
          name  = env.key
          value = env.value
        }
      }

      dynamic "env" {
        for_each = var.secret_env
        content {
          name = env.key
          value_source {
            secret_key_ref {
              secret  = env.value.secret
              version = env.value.version
            }
          }
        }
      }

      # Ready in seconds as a rule, but an instance opens its store before
      # it listens, and the first one on a new Spanner database waits for
      # the schema's DDL, which may take minutes: period × threshold is
      # Cloud Run's largest, 240 s, probed every 2 s. (A later instance
      # finds the schema applied and starts in seconds.)
      startup_probe {
        http_get {
          path = "/readyz"
        }
        period_seconds    = 2
        failure_threshold = 120
      }

      liveness_probe {
        http_get {
          path = "/healthz"
        }
      }

      dynamic "volume_mounts" {
        for_each = length(var.cloud_sql_instances) > 0 ? [1] : []
        content {
          name       = "cloudsql"
          mount_path = "/cloudsql"
        }
      }
    }

    dynamic "volumes" {
      for_each = length(var.cloud_sql_instances) > 0 ? [1] : []
      content {
        name = "cloudsql"
        cloud_sql_instance {
          instances = var.cloud_sql_instances
        }
      }
    }
  }
}

resource "google_cloud_run_v2_service_iam_member" "public" {
  count = var.public ? 1 : 0

  project  = var.project_id
  location = var.region
  name     = google_cloud_run_v2_service.this.name
  role     = "roles/run.invoker"
  member   = "allUsers"
}
