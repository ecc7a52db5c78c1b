# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform).

variables {
  project_id        = "sluice-test"
  region            = "europe-west1"
  name              = "sluice-pg"
  image             = "europe-west1-docker.pkg.dev/sluice-test/sluice/sluice:v1.0.0"
  access_keys       = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  maintenance_token = "0123456789abcdef0123456789abcdef"
  db_password       = "correct horse battery staple"
}

# The service's URL is only known after apply; give it one to check what
# is formed from it.
override_resource {
  target = google_service_account.sluice
  values = {
    email = "sluice-pg@sluice-test.iam.gserviceaccount.com"
  }
}

override_resource {
  target = module.service.google_cloud_run_v2_service.this
  values = {
    uri = "https://sluice-pg-abcdefghij-ew.a.run.app/"
  }
}

run "scales_to_zero_and_reads_secrets_from_secret_manager" {
  command = plan

  assert {
    condition     = output.service_config.min_instances == 0
    error_message = "The service must scale to zero (min instances 0)."
  }
  assert {
    condition = output.service_config.secret_env == {
      SLUICE_STORE             = "sluice-pg-store"
      SLUICE_ACCESS_KEYS       = "sluice-pg-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-pg-maintenance-token"
    }
    error_message = "The store URL (with the password), the access keys and the maintenance token must come from Secret Manager."
  }
  assert {
    condition     = length(setintersection(keys(output.service_config.plain_env), ["SLUICE_STORE", "SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN"])) == 0
    error_message = "No secret may be a plain environment variable."
  }
  assert {
    condition     = output.service_config.plain_env["SLUICE_REGION"] == "us-east-1" && output.service_config.plain_env["SLUICE_TRUST_FORWARDED"] == "true"
    error_message = "SLUICE_REGION and SLUICE_TRUST_FORWARDED (https queue URLs behind Cloud Run) must be set."
  }
  assert {
    condition     = !contains(keys(output.service_config.plain_env), "SLUICE_WAKEUPS")
    error_message = "Without Pub/Sub wake-ups, SLUICE_WAKEUPS stays unset (PostgreSQL LISTEN/NOTIFY)."
  }
  assert {
    condition     = output.service_config.concurrency == 1000
    error_message = "Long polls must share an instance (concurrency 1000)."
  }
}

run "output_url_and_maintenance_job" {
  command = plan

  assert {
    condition     = output.sqs_endpoint_url == "https://sluice-pg-abcdefghij-ew.a.run.app"
    error_message = "sqs_endpoint_url is the service's URL without a trailing slash (so AWS_ENDPOINT_URL_SQS can take it)."
  }
  assert {
    condition     = output.maintenance_url == "https://sluice-pg-abcdefghij-ew.a.run.app/_sluice/maintain"
    error_message = "The scheduler must call POST /_sluice/maintain on the service."
  }
}

run "least_privilege" {
  command = plan

  assert {
    condition     = module.database.config.client_grant.role == "roles/cloudsql.client"
    error_message = "The service account connects with roles/cloudsql.client, nothing broader."
  }
  assert {
    condition     = module.database.config.client_grant.condition == "resource.name == \"projects/sluice-test/instances/sluice-pg\" && resource.type == \"sqladmin.googleapis.com/Instance\""
    error_message = "roles/cloudsql.client must be limited to the sluice instance."
  }
  assert {
    condition     = module.database.config.client_grant.member == "serviceAccount:sluice-pg@sluice-test.iam.gserviceaccount.com" && output.service_config.service_account == "sluice-pg@sluice-test.iam.gserviceaccount.com"
    error_message = "The grant is the service's own service account's, which the service runs as."
  }
}

run "database" {
  command = plan

  assert {
    condition     = module.database.config.max_connections == "110"
    error_message = "max_connections must cover every instance's pool and LISTEN connection: 10 * (8 + 1) + 20."
  }
  assert {
    condition     = module.database.config.connector_enforcement == "REQUIRED" && module.database.config.authorized_networks == 0
    error_message = "Only the Cloud SQL connectors may reach the database."
  }
  assert {
    condition     = module.database.config.deletion_protection
    error_message = "The database is protected from destroy by default."
  }
}

run "pubsub_wakeups" {
  command = plan

  variables {
    pubsub_wakeups = true
  }

  assert {
    condition     = output.service_config.plain_env["SLUICE_WAKEUPS"] == "pubsub://sluice-test/sluice-pg-wake"
    error_message = "With Pub/Sub wake-ups, SLUICE_WAKEUPS names the deployment's topic."
  }
  assert {
    condition     = output.wakeups_topic == "sluice-pg-wake"
    error_message = "The topic is the deployment's."
  }
}

run "short_maintenance_token_is_refused" {
  command = plan

  variables {
    maintenance_token = "short"
  }

  expect_failures = [var.maintenance_token]
}

run "malformed_access_keys_are_refused" {
  command = plan

  variables {
    access_keys = "no-colon-here"
  }

  expect_failures = [var.access_keys]
}

# What the binary refuses at start (functions/app/auth.go) is refused here:
# a third field that is no account id, a secret with white space.
run "a_third_field_that_is_no_account_is_refused" {
  command = plan

  variables {
    access_keys = "AKIDEXAMPLE:secret:token"
  }

  expect_failures = [var.access_keys]
}

run "a_secret_with_white_space_is_refused" {
  command = plan

  variables {
    access_keys = "AKIDEXAMPLE:sec ret"
  }

  expect_failures = [var.access_keys]
}

# And what it takes is taken: _ and - in a key id, an empty account before
# a session token.
run "every_key_form_the_binary_takes_is_taken" {
  command = plan

  variables {
    access_keys = "AK_ID-1:secret::token, AKID2:secret:123456789012:token,AKID3:secret:123456789012"
  }
}

run "a_secret_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_ACCESS_KEYS = "AKID:SECRET" }
  }

  expect_failures = [var.extra_env]
}
