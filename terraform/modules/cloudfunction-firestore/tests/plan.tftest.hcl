# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform). The function
# front's own checks are in gcp-cloudfunction-service.

variables {
  project_id        = "sluice-test"
  region            = "europe-west1"
  name              = "sluice-cf"
  source_zip        = "tests/source.zip"
  access_keys       = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  maintenance_token = "0123456789abcdef0123456789abcdef"
  database_location = "eur3"
}

override_resource {
  target = google_service_account.sluice
  values = {
    email = "sluice-cf@sluice-test.iam.gserviceaccount.com"
  }
}

override_resource {
  target = module.function.google_cloudfunctions2_function.this
  values = {
    url = "https://europe-west1-sluice-test.cloudfunctions.net/sluice-cf"
    service_config = {
      uri = "https://sluice-cf-abcdefghij-ew.a.run.app"
    }
  }
}

run "function" {
  command = plan

  assert {
    condition     = output.function_config.min_instances == 0
    error_message = "The function must scale to zero (min instances 0)."
  }
  assert {
    condition     = output.function_config.entry_point == "Sluice" && output.function_config.go_version == "1.26.8"
    error_message = "The buildpack builds the entry point Sluice with the Go version go.mod needs."
  }
  assert {
    condition     = output.function_config.plain_env["SLUICE_STORE"] == "firestore://sluice-test/sluice?ttl=true"
    error_message = "SLUICE_STORE names the Firestore database."
  }
  assert {
    condition = output.function_config.secret_env == {
      SLUICE_ACCESS_KEYS       = "sluice-cf-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-cf-maintenance-token"
    }
    error_message = "The access keys and the maintenance token come from Secret Manager."
  }
  assert {
    condition     = length(setintersection(keys(output.function_config.plain_env), ["SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN"])) == 0
    error_message = "No secret may be a plain environment variable."
  }
  assert {
    condition     = output.function_config.service_account == "sluice-cf@sluice-test.iam.gserviceaccount.com"
    error_message = "The function runs as the deployment's own service account."
  }
}

run "url" {
  command = plan

  assert {
    condition     = output.sqs_endpoint_url == "https://sluice-cf-abcdefghij-ew.a.run.app"
    error_message = "sqs_endpoint_url is the run.app URL (no path), not the cloudfunctions.net one."
  }
  assert {
    condition     = output.maintenance_url == "https://sluice-cf-abcdefghij-ew.a.run.app/_sluice/maintain"
    error_message = "The scheduler calls /_sluice/maintain on the function."
  }
}

run "a_secret_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_MAINTENANCE_TOKEN = "0123456789abcdef0123456789abcdef" }
  }

  expect_failures = [var.extra_env]
}
