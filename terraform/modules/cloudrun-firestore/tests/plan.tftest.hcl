# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform).

variables {
  project_id        = "sluice-test"
  region            = "europe-west1"
  name              = "sluice-fs"
  image             = "europe-west1-docker.pkg.dev/sluice-test/sluice/sluice:v1.0.0"
  access_keys       = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  maintenance_token = "0123456789abcdef0123456789abcdef"
  database_location = "eur3"
}

override_resource {
  target = google_service_account.sluice
  values = {
    email = "sluice-fs@sluice-test.iam.gserviceaccount.com"
  }
}

override_resource {
  target = module.service.google_cloud_run_v2_service.this
  values = {
    uri = "https://sluice-fs-abcdefghij-ew.a.run.app"
  }
}

run "service" {
  command = plan

  assert {
    condition     = output.service_config.min_instances == 0
    error_message = "The service must scale to zero (min instances 0)."
  }
  assert {
    condition     = output.service_config.plain_env["SLUICE_STORE"] == "firestore://sluice-test/sluice?ttl=true"
    error_message = "SLUICE_STORE names the project and database, with ?ttl=true when the TTL policies are deployed."
  }
  assert {
    condition = output.service_config.secret_env == {
      SLUICE_ACCESS_KEYS       = "sluice-fs-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-fs-maintenance-token"
    }
    error_message = "The access keys and the maintenance token must come from Secret Manager."
  }
  assert {
    condition     = output.sqs_endpoint_url == "https://sluice-fs-abcdefghij-ew.a.run.app" && output.maintenance_url == "https://sluice-fs-abcdefghij-ew.a.run.app/_sluice/maintain"
    error_message = "The endpoint URL is the service's; the scheduler calls /_sluice/maintain on it."
  }
}

run "without_ttl" {
  command = plan

  variables {
    ttl = false
  }

  assert {
    condition     = output.service_config.plain_env["SLUICE_STORE"] == "firestore://sluice-test/sluice"
    error_message = "Without ttl sluice's housekeeping removes expired markers (no ?ttl=true)."
  }
}

run "runs_as_its_own_account" {
  command = plan

  assert {
    condition     = output.service_config.service_account == "sluice-fs@sluice-test.iam.gserviceaccount.com"
    error_message = "The service runs as the deployment's own service account (the one granted the database and the secrets)."
  }
}

run "default_database" {
  command = plan

  variables {
    database = "(default)"
  }

  assert {
    condition     = output.store_url == "firestore://sluice-test?ttl=true"
    error_message = "The (default) database is named by the project alone."
  }
}

run "the_store_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_STORE = "mem://" }
  }

  expect_failures = [var.extra_env]
}
