# Plan-mode checks of what matters in the deployment (the stand-in
# provider plans without a cloud; see infra/terraform). The function
# front's and the database's own checks are in gcp-cloudfunction-service
# and gcp-cloudsql-store.

variables {
  project_id        = "sluice-test"
  region            = "europe-west1"
  name              = "sluice-cfpg"
  source_zip        = "tests/source.zip"
  access_keys       = "AKIDEXAMPLE:wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"
  maintenance_token = "0123456789abcdef0123456789abcdef"
  db_password       = "correct horse battery staple"
}

override_resource {
  target = google_service_account.sluice
  values = {
    email = "sluice-cfpg@sluice-test.iam.gserviceaccount.com"
  }
}

override_resource {
  target = google_compute_network.this
  values = {
    id = "projects/sluice-test/global/networks/sluice-cfpg"
  }
}

override_resource {
  target = google_vpc_access_connector.this
  values = {
    id = "projects/sluice-test/locations/europe-west1/connectors/sluice-cfpg-cx"
  }
}

override_resource {
  target = module.function.google_cloudfunctions2_function.this
  values = {
    service_config = {
      uri = "https://sluice-cfpg-abcdefghij-ew.a.run.app"
    }
  }
}

run "function_reads_secrets_and_scales_to_zero" {
  command = plan

  assert {
    condition     = output.function_config.min_instances == 0
    error_message = "The function must scale to zero (min instances 0)."
  }
  assert {
    condition = output.function_config.secret_env == {
      SLUICE_STORE             = "sluice-cfpg-store"
      SLUICE_ACCESS_KEYS       = "sluice-cfpg-access-keys"
      SLUICE_MAINTENANCE_TOKEN = "sluice-cfpg-maintenance-token"
    }
    error_message = "The store URL (with the password), the access keys and the maintenance token come from Secret Manager."
  }
  assert {
    condition     = length(setintersection(keys(output.function_config.plain_env), ["SLUICE_STORE", "SLUICE_ACCESS_KEYS", "SLUICE_MAINTENANCE_TOKEN", "SLUICE_WAKEUPS"])) == 0 && output.function_config.plain_env["SLUICE_REGION"] == "us-east-1"
    error_message = "No secret is a plain variable; SLUICE_REGION is set; without Pub/Sub wake-ups SLUICE_WAKEUPS stays unset (LISTEN/NOTIFY)."
  }
  assert {
    condition     = output.function_config.service_account == "sluice-cfpg@sluice-test.iam.gserviceaccount.com"
    error_message = "The function runs as the deployment's own service account."
  }
}

run "database_over_private_ip" {
  command = plan

  assert {
    condition     = output.function_config.vpc_connector == "projects/sluice-test/locations/europe-west1/connectors/sluice-cfpg-cx"
    error_message = "The function reaches the deployment's network through its connector."
  }
  assert {
    condition     = !module.database.config.public_ip && module.database.config.client_grant == null
    error_message = "The database has a private IP only, and no Cloud SQL client grant is made (nothing uses the connector proxy)."
  }
  assert {
    condition     = module.database.config.max_connections == "110"
    error_message = "max_connections covers every function instance's pool and LISTEN connection: 10 * (8 + 1) + 20."
  }
  assert {
    condition     = google_compute_global_address.private_services.purpose == "VPC_PEERING" && google_service_networking_connection.this.service == "servicenetworking.googleapis.com"
    error_message = "Private services access is set up on the network (Cloud SQL's private IP needs it)."
  }
  assert {
    condition     = google_compute_network.this.auto_create_subnetworks == false && google_vpc_access_connector.this.ip_cidr_range == "10.8.0.0/28"
    error_message = "The network is the deployment's own, with only the connector's /28 in it."
  }
}

run "url" {
  command = plan

  assert {
    condition     = output.sqs_endpoint_url == "https://sluice-cfpg-abcdefghij-ew.a.run.app"
    error_message = "sqs_endpoint_url is the function's run.app URL."
  }
  assert {
    condition     = output.maintenance_url == "https://sluice-cfpg-abcdefghij-ew.a.run.app/_sluice/maintain"
    error_message = "The scheduler calls /_sluice/maintain on the function."
  }
}

run "pubsub_wakeups" {
  command = plan

  variables {
    pubsub_wakeups = true
  }

  assert {
    condition     = output.function_config.plain_env["SLUICE_WAKEUPS"] == "pubsub://sluice-test/sluice-cfpg-wake" && output.wakeups_topic == "sluice-cfpg-wake"
    error_message = "With Pub/Sub wake-ups, SLUICE_WAKEUPS names the deployment's topic."
  }
}

run "connector_cidr_must_be_a_28" {
  command = plan

  variables {
    connector_cidr = "10.8.0.0/24"
  }

  expect_failures = [var.connector_cidr]
}

run "a_secret_in_extra_env_is_refused" {
  command = plan

  variables {
    extra_env = { SLUICE_ACCESS_KEYS = "AKID:SECRET" }
  }

  expect_failures = [var.extra_env]
}
