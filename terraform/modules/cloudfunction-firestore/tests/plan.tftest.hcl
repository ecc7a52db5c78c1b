# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform).

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
  target = google_cloudfunctions2_function.this
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
    condition     = google_cloudfunctions2_function.this.service_config[0].min_instance_count == 0
    error_message = "The function must scale to zero (min instances 0)."
  }
  assert {
    condition     = google_cloudfunctions2_function.this.build_config[0].entry_point == "Sluice" && google_cloudfunctions2_function.this.build_config[0].environment_variables["GOOGLE_GO_VERSION"] == "1.26.8"
    error_message = "The buildpack builds the entry point Sluice with the Go version go.mod needs."
  }
  assert {
    condition     = google_cloudfunctions2_function.this.service_config[0].max_instance_request_concurrency > 1 && google_cloudfunctions2_function.this.service_config[0].available_cpu == "1"
    error_message = "Long polls share an instance: concurrency above 1, which needs a whole CPU."
  }
  assert {
    condition     = google_cloudfunctions2_function.this.service_config[0].environment_variables["SLUICE_STORE"] == "firestore://sluice-test/sluice?ttl=true"
    error_message = "SLUICE_STORE names the Firestore database."
  }
  assert {
    condition = { for s in google_cloudfunctions2_function.this.service_config[0].secret_environment_variables : s.key => s.secret } == {
      SLUICE_ACCESS_KEYS       = "sluice-cf-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-cf-maintenance-token"
    }
    error_message = "The access keys and the maintenance token come from Secret Manager."
  }
  assert {
    condition     = length(setintersection(keys(google_cloudfunctions2_function.this.service_config[0].environment_variables), ["SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN"])) == 0
    error_message = "No secret may be a plain environment variable."
  }
  assert {
    condition     = google_cloudfunctions2_function.this.service_config[0].service_account_email == "sluice-cf@sluice-test.iam.gserviceaccount.com"
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
  assert {
    condition     = google_cloud_run_v2_service_iam_member.public.role == "roles/run.invoker" && google_cloud_run_v2_service_iam_member.public.member == "allUsers"
    error_message = "The function is public; SigV4 decides."
  }
}

run "source_is_private" {
  command = plan

  assert {
    condition     = google_storage_bucket.source.public_access_prevention == "enforced" && google_storage_bucket.source.uniform_bucket_level_access
    error_message = "The source bucket is not public."
  }
  assert {
    condition     = google_storage_bucket_object.source.name == "sluice-source-${filemd5("tests/source.zip")}.zip"
    error_message = "The object is named by the zip's content, so a new zip makes a new build."
  }
}

run "a_secret_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_MAINTENANCE_TOKEN = "0123456789abcdef0123456789abcdef" }
  }

  expect_failures = [var.extra_env]
}
