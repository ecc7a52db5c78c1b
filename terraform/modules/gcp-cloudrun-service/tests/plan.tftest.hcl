variables {
  project_id            = "sluice-test"
  region                = "europe-west1"
  name                  = "sluice"
  image                 = "europe-west1-docker.pkg.dev/sluice-test/sluice/sluice:v1.0.0"
  service_account_email = "sluice@sluice-test.iam.gserviceaccount.com"
  env                   = { SLUICE_STORE = "firestore://sluice-test" }
  secret_env = {
    SLUICE_ACCESS_KEYS = { secret = "sluice-access-keys", version = "1" }
  }
}

run "revision" {
  command = plan

  assert {
    condition     = google_cloud_run_v2_service.this.template[0].scaling[0].min_instance_count == 0
    error_message = "Scale to zero by default."
  }
  assert {
    condition     = google_cloud_run_v2_service.this.template[0].containers[0].resources[0].cpu_idle
    error_message = "CPU only during requests (the scheduler does the background pass)."
  }
  assert {
    condition     = google_cloud_run_v2_service.this.template[0].containers[0].startup_probe[0].http_get[0].path == "/readyz" && google_cloud_run_v2_service.this.template[0].containers[0].liveness_probe[0].http_get[0].path == "/healthz"
    error_message = "Probes use /readyz (startup) and /healthz (liveness)."
  }
  assert {
    condition     = google_cloud_run_v2_service.this.template[0].containers[0].startup_probe[0].period_seconds * google_cloud_run_v2_service.this.template[0].containers[0].startup_probe[0].failure_threshold == 240
    error_message = "The startup probe waits Cloud Run's longest, 240 s: a first start on a new Spanner database applies the schema before it listens."
  }
  assert {
    condition     = output.config.secret_env == { SLUICE_ACCESS_KEYS = "sluice-access-keys" } && output.config.plain_env == { SLUICE_STORE = "firestore://sluice-test", SLUICE_TRUST_FORWARDED = "true" }
    error_message = "Plain env and env from Secret Manager are kept apart."
  }
  assert {
    condition     = google_cloud_run_v2_service.this.template[0].service_account == var.service_account_email
    error_message = "The revision runs as the given service account."
  }
  assert {
    condition     = google_cloud_run_v2_service_iam_member.public[0].role == "roles/run.invoker" && google_cloud_run_v2_service_iam_member.public[0].member == "allUsers"
    error_message = "Public by default (SigV4 decides)."
  }
  assert {
    condition     = length(google_cloud_run_v2_service.this.template[0].volumes) == 0
    error_message = "No Cloud SQL volume without Cloud SQL instances."
  }
}

run "cloud_sql_socket" {
  command = plan

  variables {
    cloud_sql_instances = ["sluice-test:europe-west1:sluice"]
  }

  assert {
    condition     = google_cloud_run_v2_service.this.template[0].volumes[0].cloud_sql_instance[0].instances == tolist(["sluice-test:europe-west1:sluice"]) && google_cloud_run_v2_service.this.template[0].containers[0].volume_mounts[0].mount_path == "/cloudsql"
    error_message = "A Cloud SQL instance's socket is mounted under /cloudsql."
  }
}

run "a_secret_as_plain_env_is_refused" {
  command = plan

  variables {
    env = { SLUICE_ACCESS_KEYS = "AKID:SECRET" }
  }

  expect_failures = [var.env]
}

run "short_timeout_is_refused" {
  command = plan

  variables {
    timeout_seconds = 20
  }

  expect_failures = [var.timeout_seconds]
}
